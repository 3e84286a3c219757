import Identity
import NodeRuntime
import Presentation
import Replica
import Store
import Synchronization
import TerminalUI

/// One run of the terminal chat after login: the loop that reads keys, follows the store and the
/// node, and paints the screen. Runs on the one thread that calls curses (the command's own
/// thread: no actor and no concurrency pool thread, so blocking on keys starves nothing); the
/// node works on the pool and talks to the session only through the store and `ChatNews`.
///
/// Every write goes through the same `Command` types as the command line (`send`, `task add`,
/// `conversation create`...), run against a `Context` whose output is captured for the screen,
/// so the chat and the CLI cannot disagree on what a command does.
final class ChatSession {
    let context: Context
    let capture: CapturedOutput
    let identity: Identity
    let node: ChatNode
    let terminal: Terminal
    let stop: StopFlag
    /// The options the node was started with: where `/pair` beacons.
    let configuration: NodeConfiguration
    var state = ChatState()
    /// The partitions behind the sidebar entries, by key (the partition id's text).
    var targets: [String: ChatTarget] = [:]
    /// The read marker of the open room when it was opened.
    var markerAtOpen: HLC?
    /// The first message that was unread when the room was opened (the unread marker stands
    /// before it; messages arriving while the room is open are read as they come).
    var unreadFromID: OpID?
    /// Whether the next reload should find `unreadFromID` (just after opening).
    var locateUnread = false
    var lastRowID: Int64 = -1
    var lastChanges = 0
    var lastFullReload = ContinuousClock.now
    var online: Set<UserID>?
    var lastReloadError: String?
    /// The pane drawn last: its room, width and line count (to keep a scrolled-back view still).
    var lastPane: (key: String?, width: Int, lines: Int)?
    /// The open chat's messages on hand (`ChatSession+History`).
    var window: [MessageView] = []
    /// Whether `window` reaches the chat's newest message.
    var windowAtNewest = true
    /// Whether `window` starts at the chat's first message.
    var historyBegins = false
    /// Each chat's unread count at the last reload, by key: a rise is an arrival.
    var unreadSeen: [String: Int] = [:]
    /// Chats with a mention or a private message among their unread (`ChatSession+Alerts`).
    var alerted: Set<String> = []
    /// Whether a reload compared unread counts already (the first does not ring).
    var arrivalsNoted = false
    /// Each conversation's members at the last reload, by key: the chat says who left or came.
    var membersSeen: [String: Set<UserID>] = [:]
    /// Your nickname, for `@nick` mentions (nil before you have one).
    var myNick: String?
    var quit = false
    /// The private room whose passphrase the input line is asking for (`/join NAME --private`).
    var pendingPrivateJoin: RoomName?
    /// The pairing `/pair` offered, until its end is shown.
    var pairing: DevicePairingOffer?

    init(
        context: Context, capture: CapturedOutput, identity: Identity, node: ChatNode, terminal: Terminal, stop: StopFlag,
        configuration: NodeConfiguration
    ) {
        self.context = context
        self.configuration = configuration
        self.capture = capture
        self.identity = identity
        self.node = node
        self.terminal = terminal
        self.stop = stop
        state.nodeSummary = node.summary
    }

    /// The person this device writes for (docs/DESIGN.md §3.8), read once: a device's person
    /// does not change while it runs, and the chat asks on every redraw.
    lazy var me: UserID = (try? context.me()) ?? identity.id
    var now: UInt64 { context.nowMillis }

    /// Runs until `/quit`, SIGINT or SIGTERM. Opens `room` (joined first if needed), else #lobby,
    /// else the first room there is. `notice` is shown first in place of the usual hint.
    func run(opening room: RoomName?, notice: String? = nil) {
        if let room {
            if (try? context.store().log.partition(roomID(room))?.joined) != true {
                execute(JoinCommand(), [room.value], show: false)
            }
            reload()
            open(roomID(room).text)
        } else {
            reload()
            let lobby = PartitionDescriptor.room(RoomName("lobby")!).id.text
            open(targets[lobby] != nil ? lobby : state.entries.first?.key)
        }
        state.notice(notice ?? "Type a message and press Enter; /help lists the commands, Ctrl-N/Ctrl-P switch rooms, /quit leaves.", millis: now)
        var lastPoll = ContinuousClock.now
        while !quit && !stop.isSet {
            draw()
            if let key = terminal.readKey(timeoutMilliseconds: 100) {
                handle(key)
                // Take what else is waiting (a paste) before painting again.
                var more = 0
                while more < 256, !quit, let next = terminal.readKey(timeoutMilliseconds: 0) {
                    handle(next)
                    more += 1
                }
            }
            if ContinuousClock.now - lastPoll >= .milliseconds(200) {
                poll()
                lastPoll = ContinuousClock.now
            }
        }
        pairing?.cancel()  // a code waiting past the chat would pair nothing anyone sees
    }

    // MARK: Keys

    func handle(_ key: Key) {
        switch key {
        case .resize, .control("l"):
            terminal.invalidate()
        case .pageUp:
            pageUp()
        case .pageDown:
            pageDown()
        case .control("g"):
            jumpToUnreadOrNewest()
        case .tab:
            // A nickname begun before the cursor is completed; otherwise Tab is the next chat.
            let names = ((try? nicknames()) ?? [:]).values.compactMap { $0 }.filter { !$0.isEmpty }
            if !state.input.complete(from: names) { open(state.neighbour(after: true)) }
        case .control("n"):
            open(state.neighbour(after: true))
        case .control("p"):
            open(state.neighbour(after: false))
        default:
            switch state.input.handle(key) {
            case .submitted(let line):
                state.scroll = 0
                submit(line)
            case .edited:
                // Typing a message (not a command) tells the others here.
                if case .character = key, !state.input.isSecret, state.input.text.first != "/", let current = state.current {
                    node.typing(in: current)
                }
            case .unhandled:
                break
            }
        }
    }

    func submit(_ line: String) {
        if let room = pendingPrivateJoin { return joinPrivate(room, passphrase: line) }
        switch ChatInput(parsing: line) {
        case .empty: break
        case .message(let text): send(text)
        case .command(let name, let arguments, let rest): command(name, arguments, rest: rest)
        }
    }

    // MARK: Following the store and the node

    /// Looks for news: new ops in the store (from peers through the node, or from other
    /// processes), presence and typing from the node, and every few seconds everything.
    func poll() {
        let rowID = (try? context.store().log.latestOpRowID()) ?? lastRowID
        let newsChanged = node.news.takeChanged()
        let storeChanged = node.news.takeStoreChanged()
        if storeChanged || rowID != lastRowID || ContinuousClock.now - lastFullReload >= .seconds(3) {
            reload()
        } else if newsChanged {
            updatePresence()
        }
        if let current = state.current {
            state.typing = node.news.typists(in: current).filter { $0 != me }.map { name(of: $0) }
        }
        showPairingEnd()
    }

    /// Reads everything the screen shows from the store.
    func reload() {
        lastFullReload = ContinuousClock.now
        do {
            let store = try context.store()
            try store.refreshAfterExternalWrite()
            lastRowID = try store.log.latestOpRowID()
            _ = try store.processInbox(me: identity)
            let nicks = try nicknames()
            state.me = Format.person(me, nick: nicks[me] ?? nil)
            myNick = nicks[me] ?? nil
            var entries: [SidebarEntry] = []
            var targets: [String: ChatTarget] = [:]
            let rooms: [(RoomName, PartitionID)] = try store.log.partitions().compactMap { record in
                guard record.joined, case .room(let name) = record.descriptor else { return nil }
                return (name, record.id)
            }.sorted { $0.0.value < $1.0.value }
            for (room, id) in rooms {
                targets[id.text] = .room(room, id)
                entries.append(
                    SidebarEntry(
                        key: id.text, label: room.description, kind: .room, unread: try store.views.unreadCount(id, reader: me),
                        topic: try store.views.roomPolicy(id)?.policy.topic ?? "", muted: try store.views.isMuted(id, owner: me)))
            }
            // Private rooms by the name they were joined under (the newest epoch of each).
            for room in try store.privateRooms() where room.writable && room.successor == nil {
                targets[room.id.text] = .room(room.name, room.id)
                entries.append(
                    SidebarEntry(
                        key: room.id.text, label: "\(room.name) (private)", kind: .room, unread: try store.views.unreadCount(room.id, reader: me),
                        muted: try store.views.isMuted(room.id, owner: me)))
            }
            for conversation in try store.views.conversations(reader: me) where conversation.isMember && conversation.joined {
                targets[conversation.id.text] = .conversation(conversation.id, members: conversation.members)
                let label = conversation.name.isEmpty ? "conversation \(Format.shortID(conversation.id))" : conversation.name
                entries.append(
                    SidebarEntry(
                        key: conversation.id.text, label: label, kind: .conversation, unread: conversation.unread, muted: conversation.muted))
            }
            self.targets = targets
            noteMembership(targets, nicknames: nicks)
            state.entries = entries
            noteArrivals(store)
            if let current = state.current, targets[current] == nil {
                state.current = nil
                open(entries.first?.key)
                return
            }
            if let current = state.current, let target = targets[current] {
                if locateUnread {
                    locateUnread = false
                    unreadFromID = try store.views.firstUnread(target.id, reader: me, after: markerAtOpen)
                }
                try refreshWindow(store, target)
                // Read only at the newest: messages below a reader scrolled back are not read yet.
                if state.scroll == 0, windowAtNewest, let index = state.entries.firstIndex(where: { $0.key == current }),
                    state.entries[index].unread > 0
                {
                    execute(ReadCommand(), target.options, show: false)
                    state.entries[index].unread = 0
                    unreadSeen[current] = 0
                    alerted.remove(current)
                    state.entries[index].alert = false
                }
            } else {
                window = []
                state.messages = []
                state.historyBegins = false
                state.unreadFrom = nil
            }
            updatePresence()
            lastReloadError = nil
        } catch {
            // Once per distinct problem: reloads repeat every few seconds.
            let message = describe(error, command: nil)
            if message != lastReloadError { state.notice(message, kind: .error, millis: now) }
            lastReloadError = message
        }
    }

    /// Who is online here; arrivals and departures become notices in every room.
    func updatePresence() {
        guard let store = try? context.store() else { return }
        let people = (try? store.directory.people(me: me, live: node.news.presence)) ?? []
        let nowOnline = Set(people.filter { !$0.isMe && $0.presence != .offline }.map(\.user))
        let byUser = Dictionary(people.map { ($0.user, $0) }, uniquingKeysWith: { a, _ in a })
        func display(_ user: UserID) -> String { Format.person(user, nick: byUser[user]?.nick ?? nil) }
        if let before = online {
            for user in nowOnline.subtracting(before).sorted() { state.notice("\(display(user)) is online", millis: now, in: "") }
            for user in before.subtracting(nowOnline).sorted() { state.notice("\(display(user)) went offline", millis: now, in: "") }
        }
        online = nowOnline
        let here: [UserID]
        switch state.current.flatMap({ targets[$0] }) {
        case .conversation(_, let members)?: here = members.filter { nowOnline.contains($0) }
        case .room?: here = Array(nowOnline)
        case nil: here = []
        }
        state.online = here.map(display).sorted()
        let linked = node.news.presence.values.filter(\.linked).count
        state.nodeSummary = node.news.nodeRunning ? "\(node.summary), \(linked) linked" : "no node: offline"
    }

    func paneMessage(_ message: MessageView) -> PaneMessage {
        PaneMessage(
            shortID: Format.shortID(message.id), author: Format.person(message.author, nick: message.nick), isOwn: message.author == me,
            time: Format.shortTime(millis: message.hlc.wallMillis, nowMillis: now), millis: message.hlc.wallMillis, text: message.text,
            mentionsMe: message.author != me && mentions(message.text), edited: message.edited, deleted: message.deleted,
            reactions: message.reactions.sorted { $0.key < $1.key }.map { PaneMessage.Reaction(emoji: $0.key, count: $0.value.count) },
            attachments: message.attachments.map { "\($0.name), \(Format.byteCount($0.size))" })
    }

    /// Opens the room or conversation `key` (marking it read; the unread marker shows where
    /// the unread messages began).
    func open(_ key: String?) {
        guard let key, let target = targets[key] else {
            state.current = nil
            reload()
            return
        }
        state.current = key
        state.scroll = 0
        state.typing = []
        window = []
        windowAtNewest = true
        historyBegins = false
        markerAtOpen = try? context.store().views.readMarker(owner: me, partition: target.id)
        unreadFromID = nil
        locateUnread = true
        reload()
    }

    func draw() {
        let (width, height) = terminal.size
        var frame = ChatLayout.frame(state, width: width, height: height, clock: Format.shortTime(millis: now, nowMillis: now))
        // Scrolled back in the same room: new lines below must not move what is being read.
        if state.scroll > 0, let last = lastPane, last.key == state.current, last.width == width, frame.paneLineCount > last.lines {
            state.scroll += frame.paneLineCount - last.lines
            frame = ChatLayout.frame(state, width: width, height: height, clock: Format.shortTime(millis: now, nowMillis: now))
        }
        lastPane = (state.current, width, frame.paneLineCount)
        state.scroll = frame.scroll
        terminal.draw(frame)
    }

    // MARK: Running commands

    /// Runs `command` with `words` as if typed after `parley NAME`, its output captured. Lines it
    /// printed become notices when `show`; errors always do. Returns its stdout lines, or nil
    /// when it failed.
    @discardableResult
    func execute(_ command: any Command, _ words: [String], show: Bool = true) -> [String]? {
        capture.take()
        defer { afterWrite() }
        do {
            let parsed = try ArgumentParser.parse(words, options: CommandRegistry.options(for: command), command: command.name)
            _ = try command.run(context, parsed)
            let lines = capture.take()
            for line in lines where show || line.isError {
                state.notice(line.text, kind: line.isError ? .error : .info, millis: now)
            }
            return lines.filter { !$0.isError }.map(\.text)
        } catch {
            state.notice(describe(error, command: command.name), kind: .error, millis: now)
            return nil
        }
    }

    /// Pokes the node when something was written.
    func afterWrite() {
        guard let store = try? context.store() else { return }
        let changes = store.database.totalChanges
        if changes != lastChanges {
            lastChanges = changes
            node.poke()
        }
    }

    /// One line for an error, without the command line's `parley:` and `--help` hints.
    func describe(_ error: any Error, command: String?) -> String {
        switch ErrorReport.cliError(for: error, databasePath: context.databasePathIfKnown, command: command) {
        case .usage(let message, _): message + " (/help lists the commands)"
        case .failure(let message): message
        }
    }

    func nicknames() throws -> [UserID: String?] {
        Dictionary(try context.store().directory.profiles().map { ($0.user, $0.nick) }, uniquingKeysWith: { a, _ in a })
    }

    func name(of user: UserID) -> String {
        Format.person(user, nick: (try? context.store().directory.profile(user)?.nick) ?? nil)
    }
}

/// A room or conversation the chat can open.
enum ChatTarget {
    case room(RoomName, PartitionID)
    case conversation(PartitionID, members: [UserID])

    var id: PartitionID {
        switch self {
        case .room(_, let id), .conversation(let id, _): id
        }
    }

    /// The options that name it to a command: `--room lobby`, `--conversation ID`.
    var options: [String] {
        switch self {
        case .room(let name, _): ["--room", name.value]
        case .conversation(let id, _): ["--conversation", id.text]
        }
    }
}

/// Lines a command printed while the chat ran it.
final class CapturedOutput {
    struct Line {
        let text: String
        let isError: Bool
    }
    private var lines: [Line] = []

    func append(_ text: String, _ isError: Bool) {
        lines.append(Line(text: text, isError: isError))
    }

    @discardableResult
    func take() -> [Line] {
        defer { lines = [] }
        return lines
    }
}

/// Set once by a signal (SIGINT, SIGTERM), read by the loop.
final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    func set() { flag.store(true, ordering: .sequentiallyConsistent) }
    var isSet: Bool { flag.load(ordering: .sequentiallyConsistent) }
}
