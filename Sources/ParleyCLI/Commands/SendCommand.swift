import Replica
import Store

/// `parley send`: post a message to a room or a private conversation. Prints only the new id on
/// stdout, so `id=$(parley send --room lobby hi)` captures it for a later edit, delete or react.
struct SendCommand: Command {
    let name = "send"
    let summary = "post a message to a room or conversation; prints the message id"
    let usage = ["send (--room NAME | --conversation ID) TEXT [--attach FILE]... [--location LAT,LON]"]
    static let room = Option.value("room", "NAME", "the room to post to (you must have joined it)")
    static let conversation = Option.value(
        "conversation", "ID", "the private conversation to post to (its id or a unique prefix of 8+ characters)")
    static let attach = Option.value("attach", "FILE", "attach a file (at most 8 MiB; repeat for several)")
    static let location = Option.value("location", "LAT,LON", "attach a location in degrees, e.g. 52.52,13.405") { text, command throws(CLIError) in
        try Lookup.location(text, command: command)
    }
    let options = [Self.room.spec, Self.conversation.spec, Self.attach.spec, Self.location.spec]
    let details = [
        "TEXT may be several words; they are joined by single spaces. Put `--` before text that starts with a dash. "
            + "With --attach, TEXT may be left out.",
        "An attachment is recorded in the message (name, size, type from its extension, hash); its content stays on this node "
            + "until peers fetch it. In a conversation the content is kept encrypted with the conversation's key.",
        "Prints the new message's id (52 characters) on stdout.",
    ]
    let examples = [
        "send --room lobby \"hello, world\"", "send --conversation 3fkq7zxa see you at eight", "send --room lobby --attach map.png the way",
        "send --room lobby --location 52.52,13.405 meet here", "send --room lobby -- -1 for me",
    ]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        let files = try arguments.values(Self.attach).map { path throws(CLIError) in try FileInput.read(path, option: "attach") }
        guard files.count <= BodyLimits.attachments else {
            throw CLIError.usage("at most \(BodyLimits.attachments) --attach files per message", command: name)
        }
        try expectPositionals(arguments, (files.isEmpty ? 1 : 0)...Int.max, names: ["TEXT"])
        let text =
            files.isEmpty || !arguments.positionals.isEmpty
            ? try Lookup.text(arguments.positionals, what: "message text", command: name) : ""
        let location = try arguments.value(Self.location)
        let target = try context.target(room: try arguments.value(Self.room), conversation: try arguments.value(Self.conversation), command: name)
        let identity = try context.identity()
        let store = try context.store()
        var attachments: [Attachment] = []
        for file in files {
            attachments.append(
                try context.storeCall(command: name) {
                    try store.attach(file.bytes, name: file.name, mime: file.mime, in: target.id, by: identity, nowMillis: context.nowMillis)
                })
        }
        let op = try context.author(.post(text: text, attachments: attachments, location: location, replyTo: nil), in: target.id, command: name)
        context.output.line(op.id.text)
        return 0
    }
}
