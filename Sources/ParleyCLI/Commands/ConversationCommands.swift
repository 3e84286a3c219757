import Identity
import Presentation
import Replica
import Store

/// `parley conversation create`: a private, end-to-end encrypted conversation (RChat's
/// conversations, docs/DESIGN.md §3.5). Prints only the new id, so scripts can capture it.
struct ConversationCreateCommand: Command {
    let name = "conversation create"
    let summary = "start a private conversation with some people; prints its id"
    let usage = ["conversation create --name NAME --members ID[,ID...]"]
    static let nameOption = Option.value("name", "NAME", "what to call it (members see it; nodes that only carry it do not)")
    static let members = Option.value(
        "members", "ID[,ID...]", "who takes part, besides you: user ids, nick#xxxxxx, or unique id prefixes from `parley people`"
    ) { text, command throws(CLIError) in
        let list = text.split(separator: ",").map { String($0).trimmingWhitespace() }.filter { !$0.isEmpty }
        guard !list.isEmpty else { throw CLIError.usage("--members needs at least one user id", command: command) }
        return list
    }
    let options = [Self.nameOption.spec, Self.members.spec]
    let details = [
        "You are always a member. A member may be given as the 52-character user id, as nick#xxxxxx, as the first 4 or more "
            + "characters of the id of someone in `parley people`, or by a nickname only one person there has.",
        "Everything said in the conversation is end-to-end encrypted with keys only its members hold. Nodes that carry it for "
            + "others see who the members are, never its name, messages or tasks. Each member learns of it through an invite in "
            + "their inbox, even if they never meet you again.",
        "Prints the conversation's id (52 characters) on stdout.",
    ]
    let examples = ["conversation create --name \"lab night\" --members k3v9q2ab,bob#7hq2mx", "conversation create --name pair --members me,carol"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        let title = try ConversationCommandSupport.conversationName(try arguments.required(Self.nameOption), command: name)
        let list = try arguments.required(Self.members)
        var members: [UserID] = []
        for text in list { members.append(try Lookup.person(text, context: context, command: name)) }
        let identity = try context.identity()
        let store = try context.store()
        let descriptor = try context.storeCall(command: name) {
            try store.createConversation(name: title, members: members, by: identity, nowMillis: context.nowMillis)
        }
        context.output.line(descriptor.id.text)
        return 0
    }
}

/// `parley conversation add`: add someone; they get the current key and an invite.
struct ConversationAddCommand: Command {
    let name = "conversation add"
    let summary = "add someone to a conversation you are in"
    let usage = ["conversation add CONVERSATION_ID USER_ID"]
    let options: [OptionSpec] = []
    let details = [
        "Any member may add people. The new member can read what is written from now on (not earlier messages) and learns of "
            + "the conversation through an invite in their inbox. USER_ID takes the same forms as --members of `conversation create`."
    ]
    let examples = ["conversation add 3fkq7zxa bob#7hq2mx"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 2...2, names: ["CONVERSATION_ID", "USER_ID"])
        let conversation = try Lookup.conversation(arguments.positionals[0], context: context, command: name)
        let user = try Lookup.person(arguments.positionals[1], context: context, command: name)
        let who = Format.person(user, nick: try context.nick(of: user))
        guard !conversation.members.current.contains(user) else {
            context.output.line("\(who) is already a member of \(conversation.label)")
            return 0
        }
        try context.author(.memberAdd(user), in: conversation.id, command: name)
        context.output.line("added \(who) to \(conversation.label)")
        return 0
    }
}

/// `parley conversation remove`: the creator removes someone; the key changes so they cannot
/// read what follows.
struct ConversationRemoveCommand: Command {
    let name = "conversation remove"
    let summary = "remove someone from a conversation you created"
    let usage = ["conversation remove CONVERSATION_ID USER_ID"]
    let options: [OptionSpec] = []
    let details = [
        "Only the conversation's creator removes members. The conversation then moves to a new key that the removed member "
            + "never receives: they keep what they could already read, and cannot read anything written after."
    ]
    let examples = ["conversation remove 3fkq7zxa bob#7hq2mx"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 2...2, names: ["CONVERSATION_ID", "USER_ID"])
        let conversation = try Lookup.conversation(arguments.positionals[0], context: context, command: name)
        let user = try Lookup.person(arguments.positionals[1], context: context, command: name)
        let me = try context.me()
        guard conversation.creator == me else {
            let creator = Format.person(conversation.creator, nick: try context.nick(of: conversation.creator))
            throw CLIError.failure(
                "only the conversation's creator (\(creator)) can remove members; you can leave with `parley conversation leave \(Format.shortID(conversation.id))`"
            )
        }
        guard user != me else { throw CLIError.failure("to leave a conversation, use `parley conversation leave \(Format.shortID(conversation.id))`") }
        let who = Format.person(user, nick: try context.nick(of: user))
        guard conversation.members.current.contains(user) else { throw CLIError.failure("\(who) is not a member of \(conversation.label)") }
        try context.author(.memberRemove(user), in: conversation.id, command: name)
        context.output.line("removed \(who) from \(conversation.label)")
        return 0
    }
}

/// `parley conversation leave`: stop taking part; the others move to a new key.
struct ConversationLeaveCommand: Command {
    let name = "conversation leave"
    let summary = "leave a conversation (what you could read stays readable)"
    let usage = ["conversation leave CONVERSATION_ID"]
    let options: [OptionSpec] = []
    let details = [
        "The remaining members move to a new key with their next message, so you cannot read what they write after you left. "
            + "The conversation disappears from `parley conversations`; its history up to your leave stays in `parley history`."
    ]
    let examples = ["conversation leave 3fkq7zxa"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 1...1, names: ["CONVERSATION_ID"])
        let conversation = try Lookup.conversation(arguments.positionals[0], context: context, command: name)
        let me = try context.me()
        guard conversation.members.current.contains(me) else {
            throw CLIError.failure("you are not a member of \(conversation.label); `parley conversations` lists yours")
        }
        try context.author(.memberLeave, in: conversation.id, command: name)
        let store = try context.store()
        try context.storeCall { try store.log.setJoined(conversation.id, false) }
        context.output.line("left \(conversation.label)")
        return 0
    }
}

/// `parley conversation rename`: a new name, encrypted like everything members say.
struct ConversationRenameCommand: Command {
    let name = "conversation rename"
    let summary = "rename a conversation you are in"
    let usage = ["conversation rename CONVERSATION_ID NAME"]
    let options: [OptionSpec] = []
    let details = ["Any member may rename it; the latest rename wins. NAME may be several words."]
    let examples = ["conversation rename 3fkq7zxa \"lab night, take two\""]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 2...Int.max, names: ["CONVERSATION_ID", "NAME"])
        let conversation = try Lookup.conversation(arguments.positionals[0], context: context, command: name)
        let title = try ConversationCommandSupport.conversationName(arguments.positionals.dropFirst().joined(separator: " "), command: name)
        try context.author(.conversationRename(name: title), in: conversation.id, command: name)
        context.output.line("renamed \(conversation.label) to '\(Format.safe(title, keepNewlines: false))'")
        return 0
    }
}

enum ConversationCommandSupport {
    /// A conversation name: trimmed, not empty, at most 128 bytes.
    static func conversationName(_ text: String, command: String) throws(CLIError) -> String {
        let title = text.trimmingWhitespace()
        if let problem = Validation.conversationNameProblem(title) { throw .usage("the conversation name \(problem)", command: command) }
        return title
    }
}
