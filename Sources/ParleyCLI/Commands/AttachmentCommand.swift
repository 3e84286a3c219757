import Presentation
import Replica
import Store

/// `parley attachment`: writes a message's attachment to a file, once its content is on this
/// node (in a conversation, decrypted with the conversation's key).
struct AttachmentCommand: Command {
    let name = "attachment"
    let summary = "save a message's attachment to a file"
    let usage = ["attachment MESSAGE_ID [INDEX] --out FILE [--force]"]
    static let out = Option.value("out", "FILE", "where to write it (refused if it exists, unless --force)")
    static let force = Flag.flag("force", "replace FILE if it exists")
    let options = [Self.out.spec, Self.force.spec]
    let details = [
        "INDEX counts a message's attachments from 1 (the default). The content is there for files sent from this node; "
            + "files sent from other nodes are fetched from peers by a running node (`parley run`), and until then this "
            + "command says they are not fetched yet."
    ]
    let examples = ["attachment 3fkq7zxa2b --out map.png", "attachment 3fkq7zxa2b 2 --out notes.pdf --force"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 1...2, names: ["MESSAGE_ID", "INDEX"])
        let path = try arguments.required(Self.out)
        let index =
            try arguments.positionals.dropFirst().first.map { value throws(CLIError) in
                guard let number = Int(value), number > 0 else { throw CLIError.usage("INDEX must be 1 or more, not '\(value)'", command: name) }
                return number
            } ?? 1
        let (partition, message) = try Lookup.message(arguments.positionals[0], context: context, command: name)
        guard !message.attachments.isEmpty else { throw CLIError.failure("message \(Format.shortID(message.id)) has no attachment") }
        guard index <= message.attachments.count else {
            throw CLIError.failure("message \(Format.shortID(message.id)) has \(message.attachments.count) attachment(s); INDEX \(index) is past the last")
        }
        let attachment = message.attachments[index - 1]
        let store = try context.store()
        let shownName = Format.safe(attachment.name, keepNewlines: false)
        switch try context.storeCall({ try store.blobs.attachmentContent(attachment, in: partition) }) {
        case .notFetched:
            throw CLIError.failure(
                "\(shownName) is not fetched yet; a linked peer that has it will send it (keep `parley run` going, then try again)")
        case .cannotOpen:
            throw CLIError.failure("\(shownName) is here but encrypted with a key this node does not hold")
        case .content(let bytes):
            try FileInput.write(bytes, to: path, force: arguments[Self.force])
            context.output.line("wrote \(shownName) (\(Format.byteCount(UInt64(bytes.count)))) to \(path)")
            return 0
        }
    }
}
