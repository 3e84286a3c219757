import Identity
import Presentation
import Replica
import Store
import TerminalUI

/// The IRC-style commands of the chat. Each maps onto the `parley` command that does the same
/// (with the open room or conversation filled in), so their rules live in one place.
extension ChatSession {
    /// The commands `/help` lists, with their synopsis.
    static let help: [(String, String)] = [
        ("/join ROOM", "join a room (or switch to it)"),
        ("/join ROOM --private", "join a private room: asks for its passphrase (not shown, not kept)"),
        ("/list", "the room directory: rooms you and your peers joined, with topic and people"),
        ("/topic [TEXT]", "show the open room's policy, or set its topic (the room's owner)"),
        ("/leave", "leave the open room or conversation"),
        ("/msg NICK [TEXT]", "open (or start) a private conversation with someone"),
        ("/conv new NAME NICK...", "start a private conversation with several people"),
        ("/conv add|remove NICK", "add or remove someone in the open conversation"),
        ("/conv leave | /conv rename NAME", "leave or rename the open conversation"),
        ("/nick NAME", "change your nickname"),
        ("/who", "who is online here"),
        ("/devices", "your devices"),
        ("/pair [stop]", "pair a new device of yours: shows a code for `parley init --pair CODE` on it; the chat goes on meanwhile"),
        ("/revoke DEVICE", "revoke one of your devices (a lost laptop): its later writes are refused everywhere"),
        ("/tasks", "the task board of the open room or conversation"),
        ("/task add TITLE [--owner me]", "add a task"),
        ("/task set ID --status open|in-progress|complete", "change a task (also --title, --owner, --no-owner)"),
        ("/task delete ID", "delete a task"),
        ("/edit ID|last TEXT", "change one of your messages (/ids shows message ids)"),
        ("/delete ID|last", "delete one of your messages"),
        ("/react ID|last EMOJI [--off]", "react to a message"),
        ("/read", "mark the open room as read"),
        ("/mute, /unmute", "mute the open chat (no bell; its unread count still shows), or unmute it"),
        ("/attach FILE [TEXT]", "send a file (at most 8 MiB)"),
        ("/ids", "show or hide message ids"),
        (
            "/help",
            "this list; PgUp/PgDn scroll the whole history, Ctrl-G first unread (again: newest), Ctrl-N/Ctrl-P switch, Tab completes a nickname, Up/Down recall"
        ),
        ("/wipe", "destroy your identity and every message on this device for good (asks first)"),
        ("/quit", "leave the chat"),
    ]

    /// The open target, or a notice saying there is none.
    func requireTarget() -> ChatTarget? {
        guard let current = state.current, let target = targets[current] else {
            state.notice("no room is open; /join lobby", kind: .error, millis: now)
            return nil
        }
        return target
    }

    func send(_ text: String) {
        guard let target = requireTarget() else { return }
        execute(SendCommand(), target.options + ["--", text], show: false)
        reload()
    }

    func command(_ name: String, _ arguments: [String], rest: String) {
        switch name {
        case "quit", "exit", "q": quit = true
        case "help", "h": showHelp()
        case "join", "j": join(arguments)
        case "leave", "part": leave()
        case "list": execute(RoomsCommand(), ["--all"])
        case "topic": topic(rest)
        case "msg", "query": message(arguments, rest: rest)
        case "conv", "conversation": conversation(arguments, rest: rest)
        case "nick": nick(arguments)
        case "who", "names": who()
        case "devices": execute(DeviceListCommand(), [])
        case "pair": pair(arguments)
        case "revoke":
            guard arguments.count == 1 else { return usage("/revoke DEVICE (an id from /devices)") }
            execute(DeviceRevokeCommand(), arguments)
        case "tasks": if let target = requireTarget() { execute(TasksCommand(), target.options) }
        case "task": task(arguments, rest: rest)
        case "edit": edit(arguments, rest: rest)
        case "delete": withMessage(arguments, own: true) { id, _ in execute(DeleteCommand(), [id]) }
        case "react":
            withMessage(arguments, own: false) { id, extra in
                guard let emoji = extra.first else { return usage("/react ID|last EMOJI [--off]") }
                execute(ReactCommand(), [id, emoji] + extra.dropFirst())
            }
        case "read": if let target = requireTarget() { execute(ReadCommand(), target.options) }
        case "mute": if let target = requireTarget() { execute(MuteCommand(), target.options) }
        case "unmute": if let target = requireTarget() { execute(MuteCommand(muted: false), target.options) }
        case "attach":
            guard let target = requireTarget() else { return }
            guard let file = arguments.first else { return usage("/attach FILE [TEXT]") }
            let text = Self.dropWords(1, from: rest)
            execute(SendCommand(), target.options + ["--attach", file] + (text.isEmpty ? [] : ["--", text]), show: false)
        case "ids": state.showIDs.toggle()
        case "clear": state.notices[state.current ?? ""] = []
        case "wipe": wipe(arguments)
        default:
            state.notice("unknown command /\(name); /help lists the commands", kind: .error, millis: now)
        }
        reload()
    }

    /// `/wipe` warns and asks for `/wipe yes`, which runs `parley wipe --yes` (the keys destroyed,
    /// the node stopped, the files removed) and leaves the chat.
    func wipe(_ arguments: [String]) {
        guard arguments == ["yes"] else {
            return state.notice(
                "/wipe destroys your identity and every message on this device for good and stops the node; type /wipe yes to do it",
                kind: .error, millis: now)
        }
        guard execute(WipeCommand(), ["--yes"], show: false) != nil else { return }
        quit = true
    }

    func usage(_ synopsis: String) {
        state.notice("usage: \(synopsis)", kind: .error, millis: now)
    }

    func showHelp() {
        for (synopsis, summary) in Self.help { state.notice("\(synopsis) — \(summary)", millis: now) }
    }

    func join(_ arguments: [String]) {
        if arguments.count == 2, arguments[1] == "--private" || arguments[1] == "-p" {
            guard let room = RoomName(arguments[0]) else {
                return state.notice("'\(arguments[0])' is not a room name: \(RoomName.problem(with: arguments[0]) ?? "")", kind: .error, millis: now)
            }
            // The next line typed is the passphrase: masked, kept out of the history.
            pendingPrivateJoin = room
            state.input.isSecret = true
            state.secretPrompt = "passphrase for \(room): "
            state.notice("type the passphrase of private room \(room) and press Enter (it is not shown; an empty line cancels)", millis: now)
            return
        }
        guard arguments.count == 1 || (arguments.count == 3 && arguments[1] == "--room-passphrase-file") else {
            return usage("/join ROOM [--private]")
        }
        guard let lines = execute(JoinCommand(), arguments, show: false), let room = RoomName(arguments[0]) else { return }
        reload()
        open(roomID(room).text)
        // The room's policy (topic, retention, history), shown to everyone who joins.
        for line in lines.dropFirst() { state.notice(line, millis: now) }
    }

    /// The passphrase typed after `/join NAME --private`: derives the room's keys and joins it.
    func joinPrivate(_ room: RoomName, passphrase: String) {
        pendingPrivateJoin = nil
        state.input.isSecret = false
        state.secretPrompt = nil
        guard !passphrase.isEmpty else { return state.notice("not joined: no passphrase given", millis: now) }
        do {
            let keys = try PrivateRoomKeys.derive(name: room, passphrase: Array(passphrase.utf8))
            try context.store().joinPrivateRoom(keys)
        } catch {
            return state.notice(describe(error, command: "join"), kind: .error, millis: now)
        }
        reload()
        open(roomID(room).text)
        state.notice("joined private room \(room)", millis: now)
    }

    /// The partition `--room NAME` names: a joined private room of that name first, else the
    /// public room.
    func roomID(_ room: RoomName) -> PartitionID {
        ((try? context.store().privateRoom(named: room)) ?? nil)?.id ?? PartitionDescriptor.room(room).id
    }

    /// `/topic`: the open room's policy; `/topic TEXT` sets the topic (`parley room set`).
    func topic(_ text: String) {
        guard let target = requireTarget() else { return }
        guard case .room(let name, let id) = target else {
            return state.notice("/topic is for rooms; a conversation has a name (/conv rename)", kind: .error, millis: now)
        }
        guard text.isEmpty else {
            execute(RoomSetCommand(), [name.value, "--topic", text])
            return
        }
        let policy = (try? context.store().views.roomPolicy(id)) ?? nil
        for line in RoomPolicyOptions.describe(policy?.policy ?? .default) { state.notice(line, millis: now) }
    }

    func leave() {
        guard let target = requireTarget() else { return }
        let done: [String]?
        switch target {
        case .room(let name, _): done = execute(LeaveCommand(), [name.value], show: false)
        case .conversation(let id, _): done = execute(ConversationLeaveCommand(), [id.text], show: false)
        }
        guard let lines = done else { return }
        // Off to the first room left, where the answer (`left #dev`) shows.
        state.current = nil
        reload()
        open(state.entries.first?.key)
        for line in lines { state.notice(line, millis: now) }
    }

    /// `/msg NICK [TEXT]`: the two-person conversation with NICK, created when there is none.
    func message(_ arguments: [String], rest: String) {
        guard let who = arguments.first else { return usage("/msg NICK [TEXT]") }
        let user: UserID
        do {
            user = try Lookup.person(who, context: context, command: "conversation create")
        } catch {
            return state.notice(describe(error, command: nil), kind: .error, millis: now)
        }
        guard user != me else { return state.notice("that is you; /msg someone else", kind: .error, millis: now) }
        let existing = try? context.store().views.conversations(reader: me).first { conversation in
            conversation.isMember && conversation.joined && Set(conversation.members) == [me, user]
        }
        var key = existing?.id.text
        if key == nil {
            let nicks = (try? nicknames()) ?? [:]
            let title = [me, user].map { (nicks[$0] ?? nil) ?? "#" + $0.short }.joined(separator: " & ")
            guard let lines = execute(ConversationCreateCommand(), ["--name", title, "--members", user.text], show: false),
                let id = lines.last
            else { return }
            key = id
            state.notice("started a private conversation with \(name(of: user))", millis: now, in: id)
        }
        reload()
        open(key)
        let text = Self.dropWords(1, from: rest)
        if !text.isEmpty { send(text) }
    }

    func conversation(_ arguments: [String], rest: String) {
        guard let sub = arguments.first else { return usage("/conv new|add|remove|leave|rename") }
        switch sub {
        case "new", "create":
            guard arguments.count >= 3 else { return usage("/conv new NAME NICK [NICK...]") }
            let members = arguments.dropFirst(2).joined(separator: ",")
            guard let lines = execute(ConversationCreateCommand(), ["--name", arguments[1], "--members", members], show: false),
                let id = lines.last
            else { return }
            reload()
            open(id)
        case "add", "remove":
            guard case .conversation(let id, _)? = requireTarget(), arguments.count == 2 else {
                return usage("/conv \(sub) NICK, in a conversation")
            }
            execute(sub == "add" ? ConversationAddCommand() : ConversationRemoveCommand(), [id.text, arguments[1]])
        case "leave":
            guard case .conversation? = requireTarget() else { return usage("/conv leave, in a conversation") }
            leave()
        case "rename":
            guard case .conversation(let id, _)? = requireTarget(), arguments.count >= 2 else {
                return usage("/conv rename NAME, in a conversation")
            }
            execute(ConversationRenameCommand(), [id.text, Self.dropWords(1, from: rest)])
        default:
            usage("/conv new|add|remove|leave|rename")
        }
    }

    func nick(_ arguments: [String]) {
        guard arguments.count == 1 else { return usage("/nick NAME") }
        guard execute(ProfileCommand(), ["--nick", arguments[0]], show: false) != nil else { return }
        state.notice("you are now \(name(of: me))", millis: now)
    }

    func who() {
        guard let target = requireTarget(), let store = try? context.store() else { return }
        let people = (try? store.directory.people(me: me, live: node.news.presence)) ?? []
        let here: [PersonView]
        switch target {
        case .room: here = people
        case .conversation(_, let members): here = people.filter { members.contains($0.user) }
        }
        state.notice("\(here.count) \(here.count == 1 ? "person" : "people") here:", millis: now)
        for person in here.sorted(by: { ($0.presence.rawValue, $0.user) < ($1.presence.rawValue, $1.user) }) {
            state.notice("  " + Self.whoLine(person), millis: now)
        }
    }

    /// One person of `/who`: name, presence, status, and "(forked)" when a key of theirs signed
    /// two different changes at one position somewhere (`parley doctor` says more).
    static func whoLine(_ person: PersonView) -> String {
        Format.person(person.user, nick: person.nick) + (person.isMe ? " (you)" : "") + " " + person.presence.rawValue
            + (person.status.map { " \"\($0)\"" } ?? "") + (person.forks > 0 ? " (forked)" : "")
    }

    func task(_ arguments: [String], rest: String) {
        guard let sub = arguments.first else { return usage("/task add|set|delete ...") }
        switch sub {
        case "add":
            guard let target = requireTarget() else { return }
            guard arguments.count >= 2 else { return usage("/task add TITLE [--owner me]") }
            if let lines = execute(TaskAddCommand(), target.options + Array(arguments.dropFirst()), show: false), let id = lines.last {
                state.notice("added task \(id.prefix(Format.shortIDLength)); /tasks shows the board", millis: now)
            }
        case "set":
            guard arguments.count >= 3 else { return usage("/task set ID --status open|in-progress|complete") }
            if execute(TaskSetCommand(), Array(arguments.dropFirst())) != nil { state.notice("task updated", millis: now) }
        case "delete":
            guard arguments.count == 2 else { return usage("/task delete ID") }
            if execute(TaskDeleteCommand(), [arguments[1]]) != nil { state.notice("task deleted", millis: now) }
        default:
            usage("/task add|set|delete ...")
        }
    }

    func edit(_ arguments: [String], rest: String) {
        withMessage(arguments, own: true) { id, _ in
            let text = Self.dropWords(1, from: rest)
            guard !text.isEmpty else { return usage("/edit ID|last TEXT") }
            execute(EditCommand(), [id, "--", text])
        }
    }

    /// Runs `body` with the message id the first argument names: an id (or prefix), or `last`
    /// for the newest message here (your own newest when `own`).
    func withMessage(_ arguments: [String], own: Bool, _ body: (String, [String]) -> Void) {
        guard let first = arguments.first else { return usage("/edit, /delete and /react take a message ID or `last` (/ids shows ids)") }
        guard first.lowercased() == "last" else { return body(first, Array(arguments.dropFirst())) }
        guard let target = requireTarget(),
            let message = (try? context.store().views.history(target.id, limit: 200))?.last(where: { !own || $0.author == me })
        else {
            return state.notice(own ? "you have written nothing here yet" : "there is no message here yet", kind: .error, millis: now)
        }
        body(message.id.text, Array(arguments.dropFirst()))
    }

    /// `text` without its first `count` words (the rest as typed, spaces inside kept).
    static func dropWords(_ count: Int, from text: String) -> String {
        var rest = Substring(text)
        for _ in 0..<count {
            rest = rest.drop { $0 == " " }
            rest = rest.drop { $0 != " " }
        }
        return String(rest.drop { $0 == " " })
    }
}
