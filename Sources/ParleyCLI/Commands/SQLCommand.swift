import Foundation
import Presentation
import SQLite
import Store

/// `parley sql`: SQL over this node's replica, read-only, with the readable views of
/// docs/SCHEMA.md (`v_messages`, `v_tasks`, `v_people`...), for people without the sqlite3 shell
/// (and the store's own SQL functions, which the views use, are defined only here and in the node).
struct SQLCommand: Command {
    let name = "sql"
    let summary = "query this node's replica with SQL, read-only (views in docs/SCHEMA.md)"
    let usage = ["sql [QUERY] [--json]"]
    static let json = Flag.flag("json", "print one JSON array of row objects per statement (column names as keys)")
    let options = [Self.json.spec]
    let details = [
        "Runs QUERY (one or more statements, each ended by ';' when there are several) on the store opened read-only: "
            + "nothing a query does can change it. Without QUERY it reads statements from standard input, with a prompt "
            + "on a terminal (an empty line or end of input ends it).",
        "The readable views: v_partitions (partition, kind, name, joined), v_messages (id, kind, place, partition, "
            + "author, nick, time, hlc, seq, text, edited, deleted, attachments, latitude, longitude, reply_to), v_reactions, v_tasks "
            + "(id, kind, place, title, status, owner, owner_nick, creator, created, deleted), v_people (id, nick, display_name, "
            + "status, presence_mode, last_seen, has_avatar) and v_members. docs/SCHEMA.md has every column and example queries.",
        "Text output: a header and aligned columns (blobs as x'HEX'). Exit status 1 on an SQL error, which names it.",
    ]
    let examples = [
        "sql \"SELECT time, nick, text FROM v_messages WHERE place = 'lobby' ORDER BY hlc DESC LIMIT 20\"",
        "sql --json \"SELECT owner_nick, count(*) AS open FROM v_tasks WHERE status = 'open' GROUP BY owner\"",
        "sql < report.sql",
    ]

    /// Rows read before the text output fixes its column widths (later rows use the same).
    static let widthSampleRows = 200

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...1, names: ["QUERY"])
        // Opening it the usual way first brings the schema (and so the views) up to date.
        _ = try context.store()
        let path = try context.dataDirectory().databasePath
        let replica: ReplicaStore
        do {
            replica = try ReplicaStore(readOnlyPath: path, key: try context.storeKey())
            try replica.database.execute("PRAGMA query_only = ON")
        } catch {
            throw ErrorReport.cliError(for: error, databasePath: path, command: name)
        }
        let json = arguments[Self.json]
        if let query = arguments.positionals.first {
            let statements = Self.statements(in: query)
            guard !statements.isEmpty else { throw CLIError.usage("QUERY holds no SQL statement", command: name) }
            for statement in statements { try execute(statement, on: replica.database, json: json, context: context) }
            return 0
        }
        return try readStatements(on: replica.database, json: json, context: context)
    }

    /// Statements typed at a prompt (on a terminal) or piped in, each run when complete. An SQL
    /// error at the prompt is reported and the next statement read; piped input stops at one.
    private func readStatements(on database: Database, json: Bool, context: Context) throws -> Int32 {
        let interactive = isatty(0) == 1 && context.output.outputIsTerminal
        var pending = ""
        var failed = false
        while true {
            if interactive {
                context.output.prompt(pending.isEmpty ? "sql> " : "...> ")
            }
            guard let line = Swift.readLine(strippingNewline: false) else { break }
            if interactive && pending.isEmpty && line.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { break }
            pending += line
            guard Database.isCompleteStatement(pending) else { continue }
            let statement = pending
            pending = ""
            do throws(CLIError) {
                try execute(statement, on: database, json: json, context: context)
            } catch {
                guard interactive else { throw error }
                context.output.errorLine(error.line)
                failed = true
            }
        }
        let rest = pending.trimmingCharacters(in: .whitespacesAndNewlines)
        if !rest.isEmpty { try execute(rest, on: database, json: json, context: context) }
        return failed ? 1 : 0
    }

    /// `text` split into its statements (the last may lack its `;`), blank ones dropped.
    static func statements(in text: String) -> [String] {
        var statements: [String] = []
        var current = ""
        for character in text {
            current.append(character)
            if character == ";" && Database.isCompleteStatement(current) {
                statements.append(current)
                current = ""
            }
        }
        statements.append(current)
        return statements.filter { !$0.trimmingCharacters(in: .whitespacesAndNewlines.union(CharacterSet(charactersIn: ";"))).isEmpty }
    }

    private func execute(_ sql: String, on database: Database, json: Bool, context: Context) throws(CLIError) {
        do {
            let statement = try database.prepare(sql)
            let columns = (0..<statement.columnCount).map { statement.columnName($0) }
            if json {
                var rows: [JSON] = []
                try statement.forEachRow { row in
                    rows.append(.object(Dictionary(uniqueKeysWithValues: columns.enumerated().map { ($1, Self.json(row.value(Int32($0)))) })))
                }
                context.output.json(rows)
                return
            }
            guard !columns.isEmpty else {
                try statement.forEachRow { _ in }
                return
            }
            var table = TextTable(columns: columns, sampleRows: Self.widthSampleRows, output: context.output)
            try statement.forEachRow { row in table.add((0..<Int32(columns.count)).map { Self.text(row.value($0)) }) }
            table.finish()
        } catch let error as SQLiteError {
            throw Self.failure(error)
        } catch {
            throw .failure("the query failed: \(error)")
        }
    }

    private static func failure(_ error: SQLiteError) -> CLIError {
        if error.code == SQLiteError.readOnly || error.message.contains("readonly") || error.message.contains("query_only") {
            return .failure("parley sql only reads: a statement that writes is refused (use the commands that change things)")
        }
        return .failure("SQL error: \(error.message); docs/SCHEMA.md lists the views and their columns")
    }

    static func text(_ value: SQLValue) -> String {
        switch value {
        case .null: ""
        case .integer(let number): String(number)
        case .real(let number): String(number)
        case .text(let text): Format.safe(text, keepNewlines: false)
        case .blob(let bytes): "x'" + bytes.map { String(format: "%02x", $0) }.joined() + "'"
        }
    }

    static func json(_ value: SQLValue) -> JSON {
        switch value {
        case .null: .null
        case .integer(let number): .integer(number)
        case .real(let number): .number(number)
        case .text(let text): .string(text)
        case .blob(let bytes): .string(bytes.map { String(format: "%02x", $0) }.joined())
        }
    }
}

/// Aligned text columns: widths from the header and the first `sampleRows` rows (so a huge
/// result is never held in memory), then every row printed as it comes.
private struct TextTable {
    let columns: [String]
    let sampleRows: Int
    let output: Output
    private var buffered: [[String]] = []
    private var widths: [Int]?

    init(columns: [String], sampleRows: Int, output: Output) {
        (self.columns, self.sampleRows, self.output) = (columns, sampleRows, output)
    }

    mutating func add(_ row: [String]) {
        if let widths {
            print(row, widths)
            return
        }
        buffered.append(row)
        if buffered.count >= sampleRows { flush() }
    }

    mutating func finish() {
        if widths == nil { flush() }
    }

    private mutating func flush() {
        var widths = columns.map(\.count)
        for row in buffered {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        print(columns, widths)
        for row in buffered { print(row, widths) }
        buffered = []
        self.widths = widths
    }

    private func print(_ row: [String], _ widths: [Int]) {
        let cells = row.enumerated().map { index, cell in
            index == row.count - 1 ? cell : cell + String(repeating: " ", count: max(0, widths[index] - cell.count))
        }
        output.line(cells.joined(separator: "  "))
    }
}
