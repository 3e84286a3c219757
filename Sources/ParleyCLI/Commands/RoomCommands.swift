import JSONViews
import Presentation
import Replica
import Store

/// `parley join ROOM [--room-passphrase-file FILE]`: take part in a room (IRC's /join).
/// Joining is local: a room exists as soon as anyone writes in it, and peers gossip its ops to
/// everyone who joined. With a room passphrase it is a private room (docs/DESIGN.md §3.7),
/// whose keys are derived from the name and the passphrase.
struct JoinCommand: Command {
    let name = "join"
    let summary = "join a room, or a private room with --room-passphrase-file (lobby and #lobby are the same room)"
    let usage = ["join ROOM [--room-passphrase-file FILE]"]
    static let roomPassphraseFile = Option.value(
        "room-passphrase-file", "FILE", "join the private room protected by the passphrase in FILE (at least 8 bytes; one line)")
    let options = [Self.roomPassphraseFile.spec]
    let details = [
        "Room names are trimmed and case-folded, with or without a leading '#': 1-64 bytes, no spaces, '#' or '/'.",
        "A private room is named by its name and its passphrase together: the same name with another passphrase is another room, "
            + "and nodes without the passphrase carry its messages encrypted but cannot read them, name it or write in it. "
            + "Once joined, --room NAME finds it by its name alone. (The global --passphrase-file is your identity key's, not a room's.)",
    ]
    let examples = ["join dev", "join '#Dev'", "join ops --room-passphrase-file ops.pass"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 1...1, names: ["ROOM"])
        let room = try context.roomName(arguments.positionals[0], command: name)
        if let file = try arguments.value(Self.roomPassphraseFile) {
            return try joinPrivate(room, passphrase: try context.roomPassphrase(file), context: context)
        }
        if context.passphraseFileGiven {
            context.output.errorLine(
                "note: \(room) is a public room: --passphrase-file is your identity key's passphrase; "
                    + "for a private room use `parley join \(room.value) --room-passphrase-file FILE`")
        }
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

    private func joinPrivate(_ room: RoomName, passphrase: [UInt8], context: Context) throws -> Int32 {
        _ = try context.identity()
        let store = try context.store()
        let keys = try context.storeCall { try PrivateRoomKeys.derive(name: room, passphrase: passphrase) }
        let wasJoined = try context.storeCall { try store.log.partition(keys.descriptor.id)?.joined ?? false }
        let heldName = try context.storeCall { try store.privateRoomName(keys.descriptor.id) }
        if wasJoined && heldName != nil {
            context.output.line("already in private room \(room)")
            return 0
        }
        try context.storeCall { try store.joinPrivateRoom(keys) }
        context.output.line("joined private room \(room)")
        return 0
    }
}

/// `parley leave ROOM`: stop taking part; the room's history stays in the store.
struct LeaveCommand: Command {
    let name = "leave"
    let summary = "leave a room (its history is kept; join again to see it); a private room of that name first"
    let usage = ["leave ROOM"]
    let options: [OptionSpec] = []
    let examples = ["leave dev"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 1...1, names: ["ROOM"])
        let room = try context.roomName(arguments.positionals[0], command: name)
        _ = try context.identity()
        let store = try context.store()
        let id = try context.storeCall { try store.privateRoom(named: room)?.id } ?? PartitionDescriptor.room(room).id
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
    static let json = Flag.flag("json", "print one JSON array of {name, partition, unread, private}; name has no '#'")
    let options = [Self.json.spec]
    let examples = ["rooms", "rooms --json"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        let me = try context.identity().id
        let store = try context.store()
        let rooms: [(name: RoomName, id: PartitionID, unread: Int, isPrivate: Bool)] = try context.storeCall {
            let publicRooms = try store.log.partitions().compactMap { record -> (RoomName, PartitionID, Int, Bool)? in
                guard record.joined, case .room(let name) = record.descriptor else { return nil }
                return (name, record.id, try store.views.unreadCount(record.id, reader: me), false)
            }
            // Private rooms by the name they were joined under: the newest epoch of each (where
            // `read` marks; unread counts are those of that epoch).
            let privateRooms = try store.privateRooms().filter { $0.successor == nil }.map { room in
                (room.name, room.id, try store.views.unreadCount(room.id, reader: me), true)
            }
            return (publicRooms + privateRooms).sorted { ($0.0.value, $0.3 ? 1 : 0) < ($1.0.value, $1.3 ? 1 : 0) }
        }
        if arguments[Self.json] {
            context.output.json(
                rooms.map { ViewJSON.room(name: $0.name, id: $0.id, unread: $0.unread, isPrivate: $0.isPrivate) })
            return 0
        }
        guard !rooms.isEmpty else {
            context.output.line("You have not joined any room; join one with `parley join NAME` (try lobby).")
            return 0
        }
        let label = { (room: (name: RoomName, id: PartitionID, unread: Int, isPrivate: Bool)) in
            room.isPrivate ? "\(room.name) (private)" : room.name.description
        }
        let width = rooms.map { label($0).count }.max() ?? 0
        for room in rooms {
            context.output.line(room.unread == 0 ? label(room) : HelpText.padded(label(room), width) + "  \(room.unread) unread")
        }
        return 0
    }
}

/// `parley room passphrase NAME --new-room-passphrase-file FILE`: change a private room's
/// passphrase (docs/DESIGN.md §3.7). The room moves to a new epoch that holders of the old
/// passphrase cannot read; holders of the new one read the whole history.
struct RoomPassphraseCommand: Command {
    let name = "room passphrase"
    let summary = "change a private room's passphrase: later messages are unreadable with the old one"
    let usage = ["room passphrase ROOM --new-room-passphrase-file FILE"]
    static let newPassphraseFile = Option.value(
        "new-room-passphrase-file", "FILE", "the room's new passphrase (at least 8 bytes; one line)")
    let options = [Self.newPassphraseFile.spec]
    let details = [
        "ROOM is a private room you joined (with --room-passphrase-file). Its messages from now on are encrypted under keys "
            + "derived from the new passphrase, in a new epoch of the room: a node that holds only the old passphrase keeps "
            + "what came before and sees a notice that the passphrase changed, and cannot read anything later. A node that "
            + "joins with the new passphrase reads the old history too. Give the new passphrase to those who should stay."
    ]
    let examples = ["room passphrase ops --new-room-passphrase-file ops-new.pass"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 1...1, names: ["ROOM"])
        let room = try context.roomName(arguments.positionals[0], command: name)
        let passphrase = try context.roomPassphrase(try arguments.required(Self.newPassphraseFile))
        let identity = try context.identity()
        let store = try context.store()
        guard let current = try context.storeCall({ try store.privateRoom(named: room) }) else {
            throw CLIError.failure(
                "you hold no private room \(room); join it first with `parley join \(room.value) --room-passphrase-file FILE`")
        }
        let keys = try context.storeCall { try PrivateRoomKeys.derive(name: room, passphrase: passphrase) }
        guard keys.descriptor.id != current.id else {
            throw CLIError.failure("the new passphrase is the room's current one; write another in the file")
        }
        try context.storeCall(command: name) {
            try store.changePrivateRoomPassphrase(current.id, to: keys, by: identity, nowMillis: context.nowMillis)
        }
        context.output.line("changed the passphrase of private room \(room); holders of the old one cannot read what follows")
        return 0
    }
}
