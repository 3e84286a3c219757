import JSONViews
import Presentation
import Replica
import Store

/// `parley join ROOM`: take part in a room (IRC's /join). Joining is local: a room exists as
/// soon as anyone writes in it, and peers gossip its ops to everyone who joined.
struct JoinCommand: Command {
    let name = "join"
    let summary = "join a room (lobby and #lobby are the same room)"
    let usage = ["join ROOM"]
    static let passphraseFile = Option.value("passphrase-file", "FILE", "(not yet supported) a passphrase-protected room")
    let options = [Self.passphraseFile.spec]
    let details = ["Room names are trimmed and case-folded, with or without a leading '#': 1-64 bytes, no spaces, '#' or '/'."]
    let examples = ["join dev", "join '#Dev'"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 1...1, names: ["ROOM"])
        try refuseUnsupported(arguments, Self.passphraseFile)
        let room = try context.roomName(arguments.positionals[0], command: name)
        _ = try context.identity()
        let store = try context.store()
        let id = PartitionDescriptor.room(room).id
        let wasJoined = try context.storeCall { try store.log.partition(id)?.joined ?? false }
        guard !wasJoined else {
            context.output.line("already in \(room)")
            return 0
        }
        try context.storeCall { try store.log.ensurePartition(.room(room), joined: true) }
        context.output.line("joined \(room)")
        return 0
    }
}

/// `parley leave ROOM`: stop taking part; the room's history stays in the store.
struct LeaveCommand: Command {
    let name = "leave"
    let summary = "leave a room (its history is kept; join again to see it)"
    let usage = ["leave ROOM"]
    let options: [OptionSpec] = []
    let examples = ["leave dev"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 1...1, names: ["ROOM"])
        let room = try context.roomName(arguments.positionals[0], command: name)
        _ = try context.identity()
        let store = try context.store()
        let id = PartitionDescriptor.room(room).id
        guard try context.storeCall({ try store.log.partition(id)?.joined ?? false }) else {
            throw CLIError.failure("you are not in \(room); `parley rooms` lists the rooms you joined")
        }
        try context.storeCall { try store.log.setJoined(id, false) }
        context.output.line("left \(room)")
        return 0
    }
}

/// `parley rooms`: the rooms you joined, with unread counts (computed locally, never replicated).
struct RoomsCommand: Command {
    let name = "rooms"
    let summary = "list the rooms you joined, with unread counts"
    let usage = ["rooms [--json]"]
    static let json = Flag.flag("json", "print one JSON array of {name, partition, unread}; name has no '#'")
    let options = [Self.json.spec]
    let examples = ["rooms", "rooms --json"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        let me = try context.identity().id
        let store = try context.store()
        let rooms: [(name: RoomName, id: PartitionID, unread: Int)] = try context.storeCall {
            try store.log.partitions().compactMap { record in
                guard record.joined, case .room(let name) = record.descriptor else { return nil }
                return (name, record.id, try store.views.unreadCount(record.id, reader: me))
            }.sorted { $0.name.value < $1.name.value }
        }
        if arguments[Self.json] {
            context.output.json(
                rooms.map { ViewJSON.room(name: $0.name, id: $0.id, unread: $0.unread) })
            return 0
        }
        guard !rooms.isEmpty else {
            context.output.line("You have not joined any room; join one with `parley join NAME` (try lobby).")
            return 0
        }
        let width = rooms.map(\.name.description.count).max() ?? 0
        for room in rooms {
            context.output.line(
                room.unread == 0
                    ? room.name.description
                    : HelpText.padded(room.name.description, width) + "  \(room.unread) unread")
        }
        return 0
    }
}
