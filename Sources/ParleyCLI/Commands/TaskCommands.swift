import Identity
import JSONViews
import Presentation
import Replica
import Store

/// `parley tasks`: a room's or conversation's task board (the Task Tracker's Open / In
/// progress / Complete); a conversation's members are its team.
struct TasksCommand: Command {
    let name = "tasks"
    let summary = "show a room's or conversation's task board"
    let usage = ["tasks (--room NAME | --conversation ID) [--json]"]
    static let room = Option.value("room", "NAME", "the room (you must have joined it)")
    static let conversation = Option.value("conversation", "ID", "a private conversation you are (or were) in")
    static let json = Flag.flag("json", "print one JSON array of {id, title, status, owner, creator}")
    let options = [Self.room.spec, Self.conversation.spec, Self.json.spec]
    let details = ["status is open, in-progress or complete; owner is a user id or null. Text output shows each task's short id."]
    let examples = ["tasks --room lobby", "tasks --conversation 3fkq7zxa --json"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        let room = try context.target(room: try arguments.value(Self.room), conversation: try arguments.value(Self.conversation), command: name)
        let store = try context.store()
        let tasks = try context.storeCall { try store.views.tasks(room.id) }
        if arguments[Self.json] {
            context.output.json(
                tasks.map(ViewJSON.task))
            return 0
        }
        guard !tasks.isEmpty else {
            context.output.line("No tasks in \(room.label) yet; add one with `parley task add \(room.option) TITLE`.")
            return 0
        }
        let nicks = try context.storeCall { Dictionary(try store.directory.profiles().map { ($0.user, $0.nick) }, uniquingKeysWith: { a, _ in a }) }
        let columns: [(TaskStatus, String)] = [(.open, "Open"), (.inProgress, "In progress"), (.complete, "Complete")]
        for (index, (status, title)) in columns.enumerated() {
            let inColumn = tasks.filter { $0.status == status }
            if index > 0 { context.output.line() }
            context.output.line("\(title) (\(inColumn.count))")
            for task in inColumn {
                var line = "  \(Format.shortID(task.id))  \(Format.safe(task.title, keepNewlines: false))"
                if let owner = task.owner { line += "  → \(Format.person(owner, nick: nicks[owner] ?? nil))" }
                context.output.line(line)
            }
        }
        return 0
    }
}

/// `parley task add`: create a task; prints its id.
struct TaskAddCommand: Command {
    let name = "task add"
    let summary = "add a task to a room's or conversation's board; prints the task id"
    let usage = ["task add (--room NAME | --conversation ID) TITLE [--owner USER_ID]"]
    static let room = Option.value("room", "NAME", "the room (you must have joined it)")
    static let conversation = Option.value("conversation", "ID", "a private conversation you are in (its tasks are encrypted like its messages)")
    static let owner = Option.value("owner", "USER_ID", "who does it: a user id, or `me`")
    let options = [Self.room.spec, Self.conversation.spec, Self.owner.spec]
    let details = ["The task starts open. Prints the new task's id (52 characters) on stdout."]
    let examples = ["task add --room lobby \"order pizza\" --owner me", "task add --conversation 3fkq7zxa \"book the van\""]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 1...Int.max, names: ["TITLE"])
        let title = try Lookup.text(arguments.positionals, what: "task title", command: name)
        let owner = try arguments.value(Self.owner).map { value throws(CLIError) in
            try Lookup.user(value, option: "owner", context: context, command: name)
        }
        let room = try context.target(room: try arguments.value(Self.room), conversation: try arguments.value(Self.conversation), command: name)
        let op = try context.author(.taskCreate(title: title, owner: owner), in: room.id, command: name)
        context.output.line(op.id.text)
        return 0
    }
}

/// `parley task set`: change a task's status, title or owner (per field, last writer wins).
struct TaskSetCommand: Command {
    let name = "task set"
    let summary = "change a task's status, title or owner"
    let usage = ["task set TASK_ID [--status S] [--title T] [--owner USER_ID | --no-owner]"]
    static let status = Option.value("status", "S", "open, in-progress or complete") { value, command throws(CLIError) in
        guard let status = TaskStatus(text: value.trimmingWhitespace()) else {
            throw CLIError.usage("--status must be open, in-progress or complete, not '\(value)'", command: command)
        }
        return status
    }
    static let title = Option.value("title", "T", "a new title")
    static let owner = Option.value("owner", "USER_ID", "a new owner: a user id, or `me`")
    static let noOwner = Flag.flag("no-owner", "leave the task without an owner")
    let options = [Self.status.spec, Self.title.spec, Self.owner.spec, Self.noOwner.spec]
    let details = ["TASK_ID is the id `parley task add` printed, or a unique prefix of 8 or more characters (`parley tasks`)."]
    let examples = ["task set 7hq2mxk4pa --status in-progress --owner me", "task set 7hq2mxk4pa --status complete"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 1...1, names: ["TASK_ID"])
        let status = try arguments.value(Self.status)
        let title = try arguments.value(Self.title).map { value throws(CLIError) in
            try Lookup.text([value], what: "task title", command: name)
        }
        if arguments.has(Self.owner) && arguments[Self.noOwner] {
            throw CLIError.usage("give --owner or --no-owner, not both", command: name)
        }
        guard status != nil || title != nil || arguments.has(Self.owner) || arguments[Self.noOwner] else {
            throw CLIError.usage("nothing to change: give --status, --title, --owner or --no-owner", command: name)
        }
        var owner = FieldChange<UserID>.unchanged
        if let value = try arguments.value(Self.owner) { owner = .set(try Lookup.user(value, option: "owner", context: context, command: name)) }
        if arguments[Self.noOwner] { owner = .cleared }
        let (partition, task) = try Lookup.task(arguments.positionals[0], context: context, command: name)
        try context.author(.taskUpdate(target: task.id, title: title, status: status, owner: owner), in: partition, command: name)
        return 0
    }
}

/// `parley task delete`: remove a task from the board (a tombstone nothing undoes).
struct TaskDeleteCommand: Command {
    let name = "task delete"
    let summary = "delete a task"
    let usage = ["task delete TASK_ID"]
    let options: [OptionSpec] = []
    let examples = ["task delete 7hq2mxk4pa"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 1...1, names: ["TASK_ID"])
        let (partition, task) = try Lookup.task(arguments.positionals[0], context: context, command: name)
        try context.author(.taskDelete(target: task.id), in: partition, command: name)
        return 0
    }
}
