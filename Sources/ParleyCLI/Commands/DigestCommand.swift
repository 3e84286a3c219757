import JSONViews
import Presentation
import Replica
import Store

/// `parley digest`: per partition, the digest of its op set (docs/DESIGN.md §3.6). Two replicas with
/// equal digests hold the same ops, hence the same state: what convergence tests compare.
struct DigestCommand: Command {
    let name = "digest"
    let summary = "show each partition's op count and digest (compare replicas)"
    let usage = ["digest [--json]"]
    static let json = Flag.flag("json", "print one JSON array of {partition, kind, name, ops, authors, digest, joined}")
    let options = [Self.json.spec]
    let details = [
        "kind is room, conversation, directory, inbox or self; name is the room name without '#', "
            + "the conversation's name, or the kind for the others."
    ]
    let examples = ["digest", "digest --json"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        _ = try context.identity()
        let store = try context.store()
        let rows = try context.storeCall { try ViewJSON.digestRows(store) }
        if arguments[Self.json] {
            context.output.json(rows.map(ViewJSON.digest))
            return 0
        }
        let names = rows.map { Format.safe($0.name, keepNewlines: false) }
        let nameWidth = max(4, names.map(\.count).max() ?? 0)
        context.output.line(HelpText.padded("KIND", 12) + "  " + HelpText.padded("NAME", nameWidth) + "  " + "     OPS  AUTHORS  DIGEST")
        for (row, name) in zip(rows, names) {
            let ops = String(row.ops), authors = String(row.authors)
            context.output.line(
                HelpText.padded(row.kind.description, 12) + "  " + HelpText.padded(name, nameWidth) + "  "
                    + String(repeating: " ", count: max(0, 8 - ops.count)) + ops + "  "
                    + String(repeating: " ", count: max(0, 7 - authors.count)) + authors + "  " + String(row.digest.text.prefix(16)))
        }
        return 0
    }
}
