import Replica
import Store

/// `parley send`: post a message. Prints only the new id on stdout, so
/// `id=$(parley send --room lobby hi)` captures it for a later edit, delete or react.
struct SendCommand: Command {
    let name = "send"
    let summary = "post a message to a room; prints the message id"
    let usage = ["send --room NAME TEXT [--location LAT,LON]"]
    let options: [OptionSpec] = [
        .value("room", "NAME", "the room to post to (you must have joined it)"),
        .value("location", "LAT,LON", "attach a location in degrees, e.g. 52.52,13.405"),
        .value("conversation", "ID", "(not yet supported) post to a private conversation"),
        .value("attach", "FILE", "(not yet supported) attach a file"),
    ]
    let details = [
        "TEXT may be several words; they are joined by single spaces. Put `--` before text that starts with a dash.",
        "Prints the new message's id (52 characters) on stdout.",
    ]
    let examples = ["send --room lobby \"hello, world\"", "send --room lobby --location 52.52,13.405 meet here", "send --room lobby -- -1 for me"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try refuseUnsupported(arguments, ["conversation", "attach"])
        let roomText = try required(arguments, "room")
        try expectPositionals(arguments, 1...Int.max, names: ["TEXT"])
        let text = try Lookup.text(arguments.positionals, what: "message text", command: name)
        let location = try arguments.value("location").map { value throws(CLIError) in try Lookup.location(value, command: name) }
        let room = try context.joinedRoom(roomText, command: name)
        let op = try context.author(.post(text: text, attachments: [], location: location, replyTo: nil), in: room.id, command: name)
        context.output.line(op.id.text)
        return 0
    }
}
