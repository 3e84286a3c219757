import Foundation
import Presentation
import Replica
import SQLite
import Store

/// `parley salvage`: every op still readable from a damaged database, verified, into an export
/// file that `parley import` takes into a fresh one (`Salvage.salvage`).
struct SalvageCommand: Command {
    let name = "salvage"
    let summary = "save every op still readable from a damaged database to an export file, to import into a fresh one"
    let usage = ["salvage --out FILE [--database FILE] [--json]"]
    static let out = Option.value("out", "FILE", "the export file to write (refused if it exists, unless --force)")
    static let database = Option.value("database", "FILE", "the database to read (default: parley.db in the data directory)")
    static let force = Flag.flag("force", "replace FILE if it exists")
    static let json = Flag.flag("json", "print one JSON array with one object of counts")
    let options = [Self.out.spec, Self.database.spec, Self.force.spec, Self.json.spec]
    let details = [
        "For a database `parley doctor` calls damaged. `history` and `export` stop at the first damaged page they meet; "
            + "salvage reads the op log row by row, steps over the damaged pages, checks every op it reads (body hash, "
            + "signature, chain) and writes them to an export file. Then stop the node, move the damaged parley.db (with "
            + "parley.db-wal and parley.db-shm) out of the data directory, and run `parley import FILE`: a fresh database "
            + "is made, and every op is verified again as it goes in.",
        "A command of its own rather than `export --salvage`: it opens the database read-only and never changes it "
            + "(export opens the store for writing and reads the views, which may be what is damaged), needs the identity "
            + "only to open the store's key (store.key; the passphrase of a protected identity), "
            + "and its output is partial by design, with counts of what it left behind.",
        "Prints the ops saved and the partitions; the ops that follow a lost op in their author's chain (an import takes "
            + "those once a peer has sent the lost ones: import the file again after the node synced); the rows left on "
            + "damaged pages, with their row id ranges. identity.key is a separate file and stays as it is; your own "
            + "partitions (read markers in self, your inbox) and your profile are ops like the others and are saved. Not ops, so not "
            + "saved: attachment contents (peers that hold them send them again), rooms you had left, local settings; "
            + "conversations' keys come back from the key grants in the file.",
        "After the import, let the node sync with a peer before you write where your own messages were lost: a new "
            + "message at a position a peer already holds is a fork, and peers then ignore your later messages there.",
    ]
    let examples = ["salvage --out rescue.parley", "salvage --out rescue.parley --database /backup/parley.db.damaged"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        let path = try arguments.required(Self.out)
        let database = try arguments.value(Self.database) ?? context.dataDirectory().databasePath
        guard FileManager.default.fileExists(atPath: database) else {
            throw CLIError.failure("there is no database at \(database); give the damaged file with --database FILE")
        }
        // An encrypted store is read with the data directory's store key (and so its identity).
        let key = Database.fileFormat(at: database) == .encrypted ? try context.storeKey() : nil
        let report = try ArchiveFile.write(to: path, force: arguments[Self.force], what: "the salvaged ops") { writer in
            do {
                return try Salvage.salvage(databaseAt: database, key: key, to: writer)
            } catch let error as SQLiteError {
                throw CLIError.failure(
                    "cannot read \(database) at all (\(error.message)): its first page or table list is damaged, so nothing can be "
                        + "salvaged; move it away and start fresh, and peers send back what they hold")
            }
        }
        if arguments[Self.json] {
            context.output.json([json(report)])
        } else {
            show(report, out: context.output, path: path, database: database)
        }
        return 0
    }

    private func json(_ report: Salvage.Report) -> JSON {
        .object([
            "ops": .integer(Int64(report.ops)), "ops_after_gap": .integer(Int64(report.opsAfterGap)),
            "partitions": .integer(Int64(report.partitions)), "fork_proofs": .integer(Int64(report.forkProofs)),
            "unreadable_ops": .integer(Int64(report.unreadableOps)), "invalid_ops": .integer(Int64(report.invalidOps)),
            "ops_without_partition": .integer(Int64(report.opsWithoutPartition)),
            "unreadable_op_ranges": .array(report.unreadableOpRanges.map { .array([.integer($0.lowerBound), .integer($0.upperBound)]) }),
            "unreadable_partition_ranges": .array(
                report.unreadablePartitionRanges.map { .array([.integer($0.lowerBound), .integer($0.upperBound)]) }),
            "complete": .bool(report.complete),
        ])
    }

    private func show(_ report: Salvage.Report, out: Output, path: String, database: String) {
        out.line("salvaged \(report.ops) ops in \(report.partitions) partitions to \(path)")
        if report.opsAfterGap > 0 {
            out.line(
                "  \(report.opsAfterGap) of them follow a lost op in their author's chain: import takes those once a peer "
                    + "has sent the lost ones (import the file again after the node synced)")
        }
        func ranges(_ ranges: [ClosedRange<Int64>]) -> String {
            let shown = ranges.prefix(8).map { $0.count == 1 ? "\($0.lowerBound)" : "\($0.lowerBound)-\($0.upperBound)" }
            return shown.joined(separator: ", ") + (ranges.count > 8 ? " and \(ranges.count - 8) more" : "")
        }
        if !report.unreadableOpRanges.isEmpty {
            out.line("  left behind: op rows on damaged pages (row ids \(ranges(report.unreadableOpRanges)))")
        }
        if report.unreadableOps + report.invalidOps > 0 {
            out.line("  left behind: \(report.unreadableOps) op rows that could not be read, \(report.invalidOps) that held no valid op")
        }
        if !report.unreadablePartitionRanges.isEmpty || report.opsWithoutPartition > 0 {
            out.line(
                "  left behind: \(report.opsWithoutPartition) ops of partitions whose description was on a damaged page"
                    + " (row ids \(ranges(report.unreadablePartitionRanges)))")
        }
        if !report.complete {
            out.line("  the damage hid the end of a table: rows after the last one read were not looked for")
        }
        if report.forkProofs > 0 { out.line("  \(report.forkProofs) fork proofs") }
        out.line(
            "Next: stop the node, move \(database) (with its -wal and -shm files) out of the data directory, "
                + "then `parley import \(path)`.")
    }
}
