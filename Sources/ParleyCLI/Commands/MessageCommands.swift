import Identity
import Presentation
import Replica
import Store

/// `parley edit`: replace the text of one of your messages (docs/DESIGN.md §3.4: only the author edits;
/// the latest edit wins; a delete beats an edit).
struct EditCommand: Command {
    let name = "edit"
    let summary = "change the text of one of your messages"
    let usage = ["edit MESSAGE_ID TEXT"]
    let options: [OptionSpec] = []
    let details = ["MESSAGE_ID is the id `parley send` printed, or a unique prefix of 8 or more characters (`parley history --ids`)."]
    let examples = ["edit 3fkq7zxa2b \"hello, world!\""]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 2...Int.max, names: ["MESSAGE_ID", "TEXT"])
        let text = try Lookup.text(Array(arguments.positionals.dropFirst()), what: "new text", command: name)
        let (partition, message) = try Lookup.message(arguments.positionals[0], context: context, command: name)
        let me = try context.me()
        guard message.author == me else {
            throw CLIError.failure("you can only edit your own messages; this one is by \(Format.person(message.author, nick: message.nick))")
        }
        guard !message.deleted else { throw CLIError.failure("message \(message.id.text) was deleted; there is nothing to edit") }
        guard message.text != text else { return 0 }
        try context.author(.edit(target: message.id, text: text), in: partition, command: name)
        return 0
    }
}

/// `parley delete`: tombstone one of your messages; it shows as deleted everywhere.
struct DeleteCommand: Command {
    let name = "delete"
    let summary = "delete one of your messages"
    let usage = ["delete MESSAGE_ID"]
    let options: [OptionSpec] = []
    let details = ["Deleting a message that is already deleted does nothing and succeeds."]
    let examples = ["delete 3fkq7zxa2b"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 1...1, names: ["MESSAGE_ID"])
        let (partition, message) = try Lookup.message(arguments.positionals[0], context: context, command: name)
        let me = try context.me()
        guard message.author == me else {
            throw CLIError.failure("you can only delete your own messages; this one is by \(Format.person(message.author, nick: message.nick))")
        }
        guard !message.deleted else { return 0 }
        try context.author(.delete(target: message.id), in: partition, command: name)
        return 0
    }
}

/// `parley react`: add (or with --off, take back) an emoji reaction to anyone's message.
struct ReactCommand: Command {
    let name = "react"
    let summary = "react to a message with an emoji (--off takes it back)"
    let usage = ["react MESSAGE_ID EMOJI [--off]"]
    static let off = Flag.flag("off", "remove your reaction instead of adding it")
    let options = [Self.off.spec]
    let details = ["EMOJI is any short text without spaces (at most 32 bytes): 👍, ❤️, +1..."]
    let examples = ["react 3fkq7zxa2b 👍", "react 3fkq7zxa2b 👍 --off"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 2...2, names: ["MESSAGE_ID", "EMOJI"])
        let emoji = arguments.positionals[1].trimmingWhitespace()
        if let problem = Validation.reactionProblem(emoji) {
            throw CLIError.usage("'\(arguments.positionals[1])' is not a reaction: a reaction \(problem)", command: name)
        }
        let (partition, message) = try Lookup.message(arguments.positionals[0], context: context, command: name)
        guard !message.deleted else { throw CLIError.failure("message \(message.id.text) was deleted; it takes no reactions") }
        try context.author(.react(target: message.id, emoji: emoji, on: !arguments[Self.off]), in: partition, command: name)
        return 0
    }
}

/// `parley read`: mark everything in a room or conversation as read. The marker is a max
/// register in your own `self` partition, so unread counts are computed locally and every node
/// of yours agrees. In a conversation, `--receipt` also tells the other members (an encrypted
/// read marker in the conversation: `history --json` lists them in `read_by`).
struct ReadCommand: Command {
    let name = "read"
    let summary = "mark a room or conversation as read (clears its unread count)"
    let usage = ["read (--room NAME | --conversation ID [--receipt])"]
    static let room = Option.value("room", "NAME", "the room (you must have joined it)")
    static let conversation = Option.value("conversation", "ID", "a private conversation you are in")
    static let receipt = Flag.flag("receipt", "in a conversation: let the other members see how far you read (a read receipt)")
    let options = [Self.room.spec, Self.conversation.spec, Self.receipt.spec]
    let examples = ["read --room lobby", "read --conversation 3fkq7zxa", "read --conversation 3fkq7zxa --receipt"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        let room = try context.target(room: try arguments.value(Self.room), conversation: try arguments.value(Self.conversation), command: name)
        let me = try context.me()
        let store = try context.store()
        let (newest, marker) = try context.storeCall {
            (try store.views.newestMessageHLC(room.id), try store.views.readMarker(owner: me, partition: room.id))
        }
        guard let newest else { return 0 }
        if arguments[Self.receipt] {
            guard try arguments.value(Self.conversation) != nil else {
                throw CLIError.usage("--receipt is for conversations; rooms have no read receipts", command: name)
            }
            let sent = try context.storeCall { try store.views.readReceipts(room.id)[me] }
            if sent.map({ $0 < newest }) ?? true {
                try context.author(.readMarker(partition: room.id, position: newest), in: room.id, command: name)
            }
        }
        guard marker.map({ $0 < newest }) ?? true else { return 0 }
        let ownData = PartitionDescriptor.ownData(owner: me)
        try context.storeCall { try store.log.ensurePartition(ownData, joined: true) }
        try context.author(.readMarker(partition: room.id, position: newest), in: ownData.id, command: name)
        return 0
    }
}

/// `mute` and `unmute`: a chat that rings no bell and shows no notification (its unread count
/// still shows). Kept in the user's own partition, so every device of theirs follows.
struct MuteCommand: Command {
    let muted: Bool
    var name: String { muted ? "mute" : "unmute" }
    var summary: String {
        muted ? "mute a room or conversation: no bell, no notification (unread still counted)" : "unmute a room or conversation"
    }
    var usage: [String] { ["\(name) (--room NAME | --conversation ID)"] }
    static let room = Option.value("room", "NAME", "the room (you must have joined it)")
    static let conversation = Option.value("conversation", "ID", "a private conversation you are in")
    let options = [Self.room.spec, Self.conversation.spec]
    var examples: [String] { ["\(name) --room lobby", "\(name) --conversation 3fkq7zxa"] }

    init(muted: Bool = true) { self.muted = muted }

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        let chat = try context.target(room: try arguments.value(Self.room), conversation: try arguments.value(Self.conversation), command: name)
        let me = try context.me()
        let store = try context.store()
        guard try context.storeCall({ try store.views.isMuted(chat.id, owner: me) }) != muted else {
            context.output.line("\(chat.label) is \(muted ? "muted" : "not muted") already")
            return 0
        }
        let ownData = PartitionDescriptor.ownData(owner: me)
        try context.storeCall { try store.log.ensurePartition(ownData, joined: true) }
        try context.author(.chatMute(partition: chat.id, muted: muted), in: ownData.id, command: name)
        context.output.line(muted ? "Muted \(chat.label): no bell, no notification; `parley unmute` undoes it" : "Unmuted \(chat.label)")
        return 0
    }
}
