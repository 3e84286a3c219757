import Identity
import JSONViews
import NodeRuntime
import Presentation
import Replica
import Store

/// `parley conversations`: the private conversations you take part in, with unread counts
/// (computed locally from your read markers, never replicated).
struct ConversationsCommand: Command {
    let name = "conversations"
    let summary = "list your private conversations, with members and unread counts"
    let usage = ["conversations [--json]"]
    static let json = Flag.flag("json", "print one JSON array of {id, name, members, unread, creator, member, muted}")
    let options = [Self.json.spec]
    let details = [
        "members is the array of current members' user ids; member says whether you still are one; name is empty until its "
            + "encrypted name has reached this node. Conversations you left are not listed."
    ]
    let examples = ["conversations", "conversations --json"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        let me = try context.me()
        let store = try context.store()
        let conversations = try context.storeCall { try store.views.conversations(reader: me) }
        if arguments[Self.json] {
            context.output.json(
                conversations.map(ViewJSON.conversation))
            return 0
        }
        guard !conversations.isEmpty else {
            context.output.line("You are in no conversation yet; start one with `parley conversation create --name NAME --members ID`.")
            return 0
        }
        let nicks = try context.storeCall { Dictionary(try store.directory.profiles().map { ($0.user, $0.nick) }, uniquingKeysWith: { a, _ in a }) }
        for conversation in conversations {
            let title = conversation.name.isEmpty ? "(name not received yet)" : Format.safe(conversation.name, keepNewlines: false)
            let others = conversation.members.filter { $0 != me }.map { Format.person($0, nick: nicks[$0] ?? nil) }
            var line = "\(Format.shortID(conversation.id))  \(title)  with " + (others.isEmpty ? "nobody else" : others.joined(separator: ", "))
            if conversation.unread > 0 { line += "  (\(conversation.unread) unread)" }
            if conversation.muted { line += "  (muted)" }
            if !conversation.isMember { line += "  (you are no longer a member)" }
            context.output.line(line)
        }
        return 0
    }
}

/// `parley people`: everyone in the directory (RChat's Chatster), with presence.
struct PeopleCommand: Command {
    let name = "people"
    let summary = "list the people in the directory, with presence"
    let usage = ["people [--search TEXT] [--json]"]
    static let search = Option.value("search", "TEXT", "only people whose nick, display name or status contains TEXT, or whose id starts with it")
    static let json = Flag.flag("json", "print one JSON array of {id, nick, display_name, status, presence, last_seen, me, avatar, forks}")
    let options = [Self.search.spec, Self.json.spec]
    let details = [
        "presence is online, away or offline. Without a running node (`parley run`) you show your chosen mode (hidden shows as "
            + "offline) and everyone else shows as offline; last_seen is null until a node has seen them.",
        "forks counts the rooms and conversations where a key of theirs signed two different changes at one position "
            + "(one identity.key used on two machines): their changes there from then on are left out; `parley doctor` says more.",
    ]
    let examples = ["people", "people --search ali", "people --json"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        let me = try context.me()
        let store = try context.store()
        // Presence comes from the running node's links; without a node everyone else is offline.
        var live: [UserID: PeerPresence] = [:]
        for report in try NodeConnection.ask(ControlRequest(.presence), context)?.presence ?? [] {
            if let id = UserID(text: report.id) { live[id] = PeerPresence(linked: report.linked, lastSeenMillis: report.lastSeen) }
        }
        let people = try context.storeCall { try store.directory.people(me: me, search: try arguments.value(Self.search)?.trimmingWhitespace(), live: live) }
        if arguments[Self.json] {
            context.output.json(
                people.map(ViewJSON.person))
            return 0
        }
        guard !people.isEmpty else {
            context.output.line("Nobody matches \(try arguments.value(Self.search).map { "'\(Format.safe($0, keepNewlines: false))'" } ?? "").")
            return 0
        }
        for person in people {
            var line = HelpText.padded(Format.person(person.user, nick: person.nick), 24) + "  " + HelpText.padded(person.presence.rawValue, 7)
            if let displayName = person.displayName { line += "  \(Format.safe(displayName, keepNewlines: false))" }
            if let status = person.status { line += "  \"\(Format.safe(status, keepNewlines: false))\"" }
            if person.isMe { line += "  (you)" }
            if person.forks > 0 { line += "  ! forked in \(person.forks) \(person.forks == 1 ? "partition" : "partitions")" }
            context.output.line(line)
        }
        return 0
    }
}
