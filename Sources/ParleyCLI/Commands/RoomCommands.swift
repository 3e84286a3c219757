import Foundation
import JSONViews
import NodeRuntime
import Presentation
import Replica
import Store

/// `parley join ROOM [--room-passphrase-file FILE]`: take part in a room (IRC's /join).
/// Joining is local: a room exists as soon as anyone writes in it, and peers gossip its ops to
/// everyone who joined. With a room passphrase it is a private room (docs/DESIGN.md §3.7),
/// whose keys are derived from the name and the passphrase. With a policy option, the joiner of
/// a public room also writes the room's policy: the first one makes them its owner.
struct JoinCommand: Command {
    let name = "join"
    let summary = "join a room, or a private room with --room-passphrase-file; set a new room's topic and retention"
    let usage = ["join ROOM [--room-passphrase-file FILE] [--topic TEXT] [--retention all|DAYSd|COUNTm] [--no-history]"]
    static let roomPassphraseFile = Option.value(
        "room-passphrase-file", "FILE", "join the private room protected by the passphrase in FILE (at least 8 bytes; one line)")
    var options: [OptionSpec] { [Self.roomPassphraseFile.spec] + RoomPolicyOptions.specs }
    let details = [
        "Room names are trimmed and case-folded, with or without a leading '#': 1-64 bytes, no spaces, '#' or '/'.",
        "A private room is named by its name and its passphrase together: the same name with another passphrase is another room, "
            + "and nodes without the passphrase carry its messages encrypted but cannot read them, name it or write in it. "
            + "Once joined, --room NAME finds it by its name alone. (The global --passphrase-file is your identity key's, not a room's.)",
        RoomPolicyOptions.ownerDetail + " Policies are for public rooms.",
    ]
    let examples = [
        "join dev", "join '#Dev'", "join ops --room-passphrase-file ops.pass", "join ops --topic 'on-call hand-over' --retention 30d",
        "join scratch --retention 500m --no-history",
    ]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 1...1, names: ["ROOM"])
        let room = try context.roomName(arguments.positionals[0], command: name)
        let change = try RoomPolicyOptions.change(arguments, command: name)
        if let file = try arguments.value(Self.roomPassphraseFile) {
            if change != nil {
                throw CLIError.usage("--topic, --retention and --no-history are for public rooms, not with --room-passphrase-file", command: name)
            }
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
        // A policy change by someone other than the owner is refused before anything is written.
        if change != nil { try RoomPolicyOptions.requireOwnership(of: room, context) }
        let wasJoined = try context.storeCall { try store.log.partition(id)?.joined ?? false }
        if !wasJoined { try context.storeCall { try store.log.ensurePartition(.room(room), joined: true) } }
        if let change {
            try RoomPolicyOptions.write(change, room: room, context, command: name)
        }
        context.output.line(wasJoined ? "already in \(room)" : "joined \(room)")
        if let policy = try context.storeCall({ try store.views.roomPolicy(id) }) {
            for line in RoomPolicyOptions.describe(policy.policy) { context.output.line(line) }
        }
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

/// `parley room set ROOM`: change the policy of a room you own.
struct RoomSetCommand: Command {
    let name = "room set"
    let summary = "change a room's topic, retention or history for new joiners (its owner only)"
    let usage = ["room set ROOM [--topic TEXT] [--retention all|DAYSd|COUNTm] [--history | --no-history]"]
    var options: [OptionSpec] { RoomPolicyOptions.specs + [RoomPolicyOptions.history.spec] }
    let details = [
        RoomPolicyOptions.ownerDetail,
        "Fields not given keep their value. A room without a policy takes this one, and you become its owner.",
    ]
    let examples = ["room set ops --topic 'incident 42: see the runbook'", "room set scratch --retention all --history"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 1...1, names: ["ROOM"])
        let joined = try context.joinedRoom(arguments.positionals[0], command: name)
        guard let change = try RoomPolicyOptions.change(arguments, command: name) else {
            throw CLIError.usage("give at least one of --topic, --retention, --history or --no-history", command: name)
        }
        let policy = try RoomPolicyOptions.write(change, room: joined.name, context, command: name)
        context.output.line("\(joined.name) policy set")
        for line in RoomPolicyOptions.describe(policy) { context.output.line(line) }
        return 0
    }
}

/// The policy options `join` and `room set` share, and writing the policy op.
enum RoomPolicyOptions {
    static let topic = Option.value("topic", "TEXT", "the room's topic: one line, at most \(RoomPolicy.maxTopicBytes) bytes") {
        text, command throws(CLIError) in
        let topic = text.trimmingCharacters(in: .whitespaces)
        if let problem = RoomPolicy(topic: topic).problem { throw CLIError.usage(problem, command: command) }
        return topic
    }
    static let retention = Option.value(
        "retention", "all|DAYSd|COUNTm",
        "how much history replicas keep: everything, the last DAYS days (1-\(Retention.maxDays)) or the last COUNT messages (1-\(Retention.maxMessages))"
    ) { text, command throws(CLIError) in
        guard let retention = Retention(text: text) else {
            throw CLIError.usage(
                "--retention '\(text)' is not all, DAYSd (1-\(Retention.maxDays)) or COUNTm (1-\(Retention.maxMessages)); e.g. 30d or 500m", command: command)
        }
        return retention
    }
    static let noHistory = Flag.flag("no-history", "people who join later are shown only what is written after they joined")
    static let history = Flag.flag("history", "people who join later are shown the whole history (the default)")
    static let specs = [topic.spec, retention.spec, noHistory.spec]
    static let ownerDetail =
        "The first policy a room gets (by its time stamp) makes its author the room's owner; only the owner's later changes count. "
        + "Retention drops older messages on every honest node; hiding history from new joiners is a courtesy of honest nodes, not secrecy."

    struct Change {
        var topic: String?
        var retention: Retention?
        var history: Bool?

        func applied(to policy: RoomPolicy) -> RoomPolicy {
            RoomPolicy(
                topic: topic ?? policy.topic, retention: retention ?? policy.retention, historyForNewJoiners: history ?? policy.historyForNewJoiners)
        }
    }

    /// The change the options ask for; nil when none was given.
    static func change(_ arguments: ParsedArguments, command: String) throws(CLIError) -> Change? {
        let history: Bool? =
            arguments.knows(Self.history) && arguments[Self.history]
            ? true : (arguments[Self.noHistory] ? false : nil)
        if arguments.knows(Self.history), arguments[Self.history], arguments[Self.noHistory] {
            throw .usage("--history and --no-history contradict each other; give one", command: command)
        }
        let change = Change(topic: try arguments.value(Self.topic), retention: try arguments.value(Self.retention), history: history)
        return change.topic == nil && change.retention == nil && change.history == nil ? nil : change
    }

    /// Writes the room's policy with `change` applied to the one in force. Refused when the
    /// room has an owner other than this user: their op would change nothing anywhere.
    @discardableResult
    static func write(_ change: Change, room: RoomName, _ context: Context, command: String) throws(CLIError) -> RoomPolicy {
        try requireOwnership(of: room, context)
        let store = try context.store()
        let id = PartitionDescriptor.room(room).id
        let current = try context.storeCall { try store.views.roomPolicy(id) }
        let policy = change.applied(to: current?.policy ?? .default)
        try context.author(.roomPolicy(policy), in: id, command: command)
        return policy
    }

    /// Fails unless the room has no owner yet (as far as this store knows) or this user owns it.
    static func requireOwnership(of room: RoomName, _ context: Context) throws(CLIError) {
        let me = try context.me()
        let store = try context.store()
        let current = try context.storeCall { try store.views.roomPolicy(PartitionDescriptor.room(room).id) }
        guard let current, current.owner != me else { return }
        let owner = (try? context.nick(of: current.owner)).flatMap { $0 }.map { "\($0)#\(current.owner.short)" } ?? current.owner.short
        throw CLIError.failure("\(room)'s policy is set by its owner, \(TerminalText.line(owner)); only they can change it")
    }

    /// The policy in lines for people.
    static func describe(_ policy: RoomPolicy) -> [String] {
        var lines: [String] = []
        if !policy.topic.isEmpty { lines.append("topic: " + TerminalText.line(policy.topic)) }
        lines.append("keeps: " + policy.retention.phrase)
        if !policy.historyForNewJoiners { lines.append("new joiners see only messages written after they joined") }
        return lines
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

/// `parley rooms`: the rooms you joined, with unread counts (computed locally, never replicated)
/// and topics; with `--all`, the room directory: the public rooms linked peers list too.
struct RoomsCommand: Command {
    let name = "rooms"
    let summary = "list the rooms you joined, with unread counts; --all lists the rooms peers have joined too"
    let usage = ["rooms [--all] [--json]"]
    static let json = Flag.flag(
        "json",
        "print one JSON array: {name, partition, unread, private, muted, topic, retention, history, owner}, or with --all {name, topic, people, joined}")
    static let all = Flag.flag("all", "the room directory: the public rooms you and your linked peers have joined, with topic and people")
    let options = [Self.all.spec, Self.json.spec]
    let details = [
        "With --all, a running node asks its linked peers; without one, only the rooms you joined are listed. "
            + "People is the largest count any node reports: the people who wrote in the room. Topics and counts from peers are their word; "
            + "joining fetches the room's own signed messages. Private rooms are never listed by --all."
    ]
    let examples = ["rooms", "rooms --json", "rooms --all", "rooms --all --json"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        if arguments[Self.all] { return try listDirectory(context, json: arguments[Self.json]) }
        let me = try context.me()
        let store = try context.store()
        let rooms = try context.storeCall { try store.joinedRooms(reader: me) }
        if arguments[Self.json] {
            context.output.json(rooms.map(ViewJSON.room))
            return 0
        }
        guard !rooms.isEmpty else {
            context.output.line("You have not joined any room; join one with `parley join NAME` (try lobby), or list them with `parley rooms --all`.")
            return 0
        }
        let label = { (room: ReplicaStore.JoinedRoom) in
            room.isPrivate ? "\(room.name) (private)" : room.name.description
        }
        let width = rooms.map { label($0).count }.max() ?? 0
        for room in rooms {
            var line = HelpText.padded(label(room), width)
            if room.unread > 0 { line += "  \(room.unread) unread" }
            if room.muted { line += "  (muted)" }
            if let topic = room.policy?.policy.topic, !topic.isEmpty { line += "  " + TerminalText.line(topic) }
            context.output.line(line.trimmingCharacters(in: .whitespaces))
        }
        return 0
    }

    /// `rooms --all`: the running node's directory, or the joined rooms alone without a node.
    private func listDirectory(_ context: Context, json: Bool) throws(CLIError) -> Int32 {
        let rooms = try Self.directory(context)
        if json {
            context.output.json(rooms.map { ViewJSON.directoryRoom(name: $0.name, topic: $0.topic, people: $0.people, joined: $0.joined) })
            return 0
        }
        guard !rooms.isEmpty else {
            context.output.line("No room is listed: neither you nor your linked peers joined one. Create one with `parley join NAME`.")
            return 0
        }
        for line in Self.directoryLines(rooms) { context.output.line(line) }
        return 0
    }

    struct Listed {
        var name: RoomName
        var topic: String
        var people: Int
        var joined: Bool
    }

    /// The directory from the running node, or the joined rooms from the store without one.
    static func directory(_ context: Context) throws(CLIError) -> [Listed] {
        if let response = try NodeConnection.ask(ControlRequest(.rooms), context) {
            return (response.rooms ?? []).compactMap { room in
                RoomName(room.name).map { Listed(name: $0, topic: room.topic, people: room.people, joined: room.joined) }
            }
        }
        let me = try context.me()
        let store = try context.store()
        return try context.storeCall {
            try store.log.partitions().compactMap { record -> Listed? in
                guard record.joined, case .room(let name) = record.descriptor else { return nil }
                let topic = try store.views.roomPolicy(record.id)?.policy.topic ?? ""
                return Listed(name: name, topic: topic, people: try store.views.roomPeople(record.id, me: me), joined: true)
            }.sorted { $0.name.value < $1.name.value }
        }
    }

    /// The directory as lines: `#name  N people  [joined]  topic`.
    static func directoryLines(_ rooms: [Listed]) -> [String] {
        let width = rooms.map(\.name.description.count).max() ?? 0
        return rooms.map { room in
            var line = HelpText.padded(room.name.description, width) + "  " + (room.people == 1 ? "1 person " : HelpText.padded("\(room.people) people", 9))
            line += room.joined ? "  joined" : "        "
            if !room.topic.isEmpty { line += "  " + TerminalText.line(room.topic) }
            return line.trimmingCharacters(in: .whitespaces)
        }
    }
}

/// `parley room passphrase NAME --new-room-passphrase-file FILE`: change a private room's
/// passphrase (docs/DESIGN.md §3.7). The room moves to a new epoch that holders of the old
/// passphrase cannot read; holders of the new one read the whole history.
struct RoomPassphraseCommand: Command {
    let name = "room passphrase"
    let summary = "change a private room's passphrase: later messages are unreadable with the old one"
    let usage = ["room passphrase ROOM --new-room-passphrase-file FILE [--no-history]"]
    static let newPassphraseFile = Option.value(
        "new-room-passphrase-file", "FILE", "the room's new passphrase (at least 8 bytes; one line)")
    static let noHistory = Flag.flag("no-history", "those who join with the new passphrase only read what is written from now on")
    let options = [Self.newPassphraseFile.spec, Self.noHistory.spec]
    let details = [
        "ROOM is a private room you joined (with --room-passphrase-file). Its messages from now on are encrypted under keys "
            + "derived from the new passphrase, in a new epoch of the room: a node that holds only the old passphrase keeps "
            + "what came before and sees a notice that the passphrase changed, and cannot read anything later. A node that "
            + "joins with the new passphrase reads the old history too, unless --no-history: then the new epoch carries no key "
            + "to the old one, and only those who held the old passphrase read what came before. Give the new passphrase to "
            + "those who should stay."
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
            try store.changePrivateRoomPassphrase(
                current.id, to: keys, keepHistory: !arguments[Self.noHistory], by: identity, nowMillis: context.nowMillis)
        }
        context.output.line(
            "changed the passphrase of private room \(room); holders of the old one cannot read what follows"
                + (arguments[Self.noHistory] ? ", and those who join with the new one cannot read what came before" : ""))
        return 0
    }
}
