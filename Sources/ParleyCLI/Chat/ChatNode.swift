import Foundation
import Identity
import NodeRuntime
import Store
import Synchronization

/// The node the chat talks to: the one already running for the data directory (attached through
/// its control socket), or one started in this process. Either way the chat writes the store
/// itself and pokes the node, exactly as the other commands do, and learns the node's news
/// (views changed, typing, presence) from its `watch` stream on the control socket, which a
/// background task turns into `ChatNews` for the UI thread.
final class ChatNode: Sendable {
    /// Where the node runs.
    enum Mode: Sendable {
        case attached(pid: Int32)
        case inProcess(Node)
    }

    let mode: Mode
    let dataDirectory: String
    let news = ChatNews()
    private let watcher: Mutex<Task<Void, Never>?> = Mutex(nil)

    /// The name of the in-process node's log in the data directory: the node's lines must never
    /// draw over the screen.
    static let logFileName = "chat-node.log"

    private init(mode: Mode, dataDirectory: String) {
        self.mode = mode
        self.dataDirectory = dataDirectory
    }

    /// Attaches to the node running for `context`'s data directory, or starts one in this process
    /// with `configuration` (the options `parley run` takes), logging to `chat-node.log`.
    static func attachOrStart(
        _ context: Context, identity: Identity, configuration: @autoclosure () throws(CLIError) -> NodeConfiguration,
        level: NodeLog.Level
    ) throws(CLIError) -> ChatNode {
        let directory = try context.dataDirectory().path
        if let response = try? NodeConnection.ask(ControlRequest(.ping), context), let pong = response.pong {
            return ChatNode(mode: .attached(pid: pong.pid), dataDirectory: directory).started()
        }
        let configuration = try configuration()
        let log = LogFile(path: directory + "/" + logFileName)
        let node = Node(configuration: configuration, identity: identity, log: NodeLog(level: level, sink: log.write))
        do {
            _ = try NodeConnection.wait { try await node.start() }
        } catch let error as NodeError {
            throw CLIError.failure(error.description)
        } catch {
            throw CLIError.failure("cannot start the node: \(error)")
        }
        return ChatNode(mode: .inProcess(node), dataDirectory: directory).started()
    }

    /// Starts the task that follows the node's news: its event stream (`watch` on the control
    /// socket, the same for a node in this process and one in another), reconnecting every
    /// second while the node is away.
    private func started() -> ChatNode {
        let news = self.news, directory = dataDirectory
        let task = Task.detached {
            while !Task.isCancelled {
                await ChatNode.follow(directory: directory, news: news)
                news.setNodeRunning(false)
                try? await Task.sleep(for: .seconds(1))
            }
        }
        watcher.withLock { $0 = task }
        return self
    }

    /// Follows one `watch` stream until it ends.
    private static func follow(directory: String, news: ChatNews) async {
        do {
            let client = try ControlClient.connect(dataDirectory: directory)
            defer { client.close() }
            let events = try await client.watch()
            news.setNodeRunning(true)
            await refreshPresence(directory: directory, news: news)
            for try await event in events {
                switch event {
                case .changed, .partitions: news.storeChanged()
                case .typing(let partition, let user): news.typing(partition: partition.text, user: user)
                case .presence, .peers: await refreshPresence(directory: directory, news: news)
                }
            }
        } catch {
            return
        }
    }

    /// Asks the node what its links say about presence, and records the answer.
    private static func refreshPresence(directory: String, news: ChatNews) async {
        guard let client = try? ControlClient.connect(dataDirectory: directory) else { return }
        defer { client.close() }
        if let presence = try? await client.presence() { news.setPresence(presence) }
    }

    /// Tells the node's peers that the user types in `partition` (the node sends at most one
    /// frame per partition every few seconds; this sends it at most one request a second).
    func typing(in partition: String) {
        guard news.shouldSendTyping(partition) else { return }
        let directory = dataDirectory
        Task.detached {
            guard let client = try? ControlClient.connect(dataDirectory: directory) else { return }
            defer { client.close() }
            _ = try? await client.send(ControlRequest(.typing, partition: partition), timeout: .seconds(2))
        }
    }

    /// Tells the node that the chat wrote the store, so it pushes the new ops at once. Does not
    /// wait: the node also notices by itself within its poll interval.
    func poke() {
        let directory = dataDirectory
        Task.detached {
            guard let client = try? ControlClient.connect(dataDirectory: directory) else { return }
            defer { client.close() }
            try? await client.notify(ControlRequest(.poke))
        }
    }

    /// Stops the news task and, for a node started here, the node (gracefully: goodbyes, store
    /// closed). Blocks until done.
    func stop() {
        watcher.withLock { $0?.cancel() }
        if case .inProcess(let node) = mode {
            _ = try? NodeConnection.wait { await node.stop() }
        }
    }

    /// `node here` or `attached to node 1234`, for the status bar.
    var summary: String {
        switch mode {
        case .attached(let pid): "node \(pid)"
        case .inProcess: "node here"
        }
    }
}

/// What the node's followers learned, for the UI thread to pick up between keys.
final class ChatNews: Sendable {
    private struct State {
        var presence: [UserID: PeerPresence] = [:]
        var nodeRunning = true
        var typing: [(partition: String, user: UserID, until: ContinuousClock.Instant)] = []
        var changed = false
        var storeChanged = false
        var typingSent: [String: ContinuousClock.Instant] = [:]
    }
    private let state = Mutex(State())

    func setPresence(_ presence: [UserID: PeerPresence]) {
        state.withLock {
            if $0.presence != presence { $0.changed = true }
            $0.presence = presence
        }
    }

    func setNodeRunning(_ running: Bool) {
        state.withLock {
            if $0.nodeRunning != running { $0.changed = true }
            $0.nodeRunning = running
        }
    }

    /// The node says views changed: the session re-reads the store at its next look.
    func storeChanged() {
        state.withLock { $0.storeChanged = true }
    }

    /// Whether the store changed since the last call.
    func takeStoreChanged() -> Bool {
        state.withLock { state in
            defer { state.storeChanged = false }
            return state.storeChanged
        }
    }

    /// Whether a typing request for `partition` is due (one a second at most).
    func shouldSendTyping(_ partition: String) -> Bool {
        state.withLock { state in
            let now = ContinuousClock.now
            if let last = state.typingSent[partition], now - last < .seconds(1) { return false }
            state.typingSent[partition] = now
            return true
        }
    }

    /// Records that `user` types in `partition` (shown for 6 seconds unless repeated).
    func typing(partition: String, user: UserID) {
        state.withLock { state in
            state.typing.removeAll { $0.partition == partition && $0.user == user }
            state.typing.append((partition, user, .now + NodeEvent.typingShownFor))
            state.changed = true
        }
    }

    /// Something changed that the screen shows (`changed` is reset by reading it).
    func takeChanged() -> Bool {
        state.withLock { state in
            defer { state.changed = false }
            return state.changed
        }
    }

    var presence: [UserID: PeerPresence] { state.withLock { $0.presence } }
    var nodeRunning: Bool { state.withLock { $0.nodeRunning } }

    /// Who types in `partition` now.
    func typists(in partition: String) -> [UserID] {
        state.withLock { state in
            let now = ContinuousClock.now
            state.typing.removeAll { $0.until < now }
            return state.typing.filter { $0.partition == partition }.map(\.user)
        }
    }
}

/// An append-only log file, written whole lines at a time from any thread.
final class LogFile: Sendable {
    private let descriptor: Int32
    private let lock = Mutex(())

    init(path: String) {
        descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    @Sendable func write(_ line: String) {
        guard descriptor >= 0 else { return }
        let bytes = Array((line + "\n").utf8)
        lock.withLock { _ in
            bytes.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let written = Foundation.write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                    if written <= 0 { return }
                    offset += written
                }
            }
        }
    }
}
