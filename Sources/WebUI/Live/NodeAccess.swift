import Foundation
import Identity
import NodeRuntime
import Replica
import Store
import Synchronization

/// How the web API reaches the node: store reads on a connection of their own
/// (`ReadConnection`), writes on the node's executor (`Node.write`: a write goes to the linked
/// peers at once), typing frames, live presence, and the node's events, forwarded to the open
/// event streams with a heartbeat.
public final class NodeAccess: Sendable {
    public let identity: Identity
    let node: Node
    /// The person this node writes for (its identity, or the person whose device it is).
    var me: UserID { node.me }
    let hub = EventHub()
    /// The pairing the page offered last (one waits at a time).
    let pairing = Mutex<DevicePairingOffer?>(nil)
    private let tasks = TaskBox()
    private let reads: ReadConnection

    public init(node: Node, identity: Identity) {
        self.node = node
        self.identity = identity
        reads = ReadConnection(path: node.configuration.databasePath, identity: identity)
    }

    /// The wall clock for the ops the page writes: the node's, with its `--clock-skew-ms`.
    func nowMillis() -> UInt64 { node.wallMillis }

    /// Runs `body` against the node's store, for reads: on the read connection, so the node's
    /// executor goes on with its links meanwhile.
    func read<T: Sendable>(_ body: @escaping @Sendable (ReplicaStore) throws -> T) async throws -> T {
        if let result = try await reads.read(body) { return result }
        return try await node.read(body)
    }

    /// Runs `body` against the node's store; the node pushes what it wrote to its peers at once
    /// and tells every interface what changed.
    func write<T: Sendable>(_ body: @escaping @Sendable (ReplicaStore) throws -> T) async throws -> T {
        try await node.write(body)
    }

    /// Panic wipe: destroys the keys now (nothing can be read after this returns), then removes
    /// the data directory's files and stops the node, after the answer has gone.
    func wipe() async {
        await node.wipeKeys()
        Task { [node] in await node.wipe() }
    }

    /// What the node's links say about each peer, for `Directory.people(me:search:live:)`.
    func livePresence() async -> [UserID: PeerPresence] {
        await node.livePresence()
    }

    /// Tells the linked peers who may see `partition` that this user is typing there (the node
    /// sends at most one frame per partition every few seconds).
    func typing(in partition: PartitionID) async {
        await node.typing(in: partition)
    }

    // MARK: Events

    /// Forwards the node's events to the event streams (a typing user's nick looked up on the
    /// way) and sends every stream a heartbeat every 15 s.
    func startWatching() {
        let events = Task { [self, node, hub] in
            for await event in await node.events() {
                switch event {
                case .changed(let partitions): hub.publish(.changed(partitions))
                case .partitions: hub.publish(.partitions)
                case .presence: hub.publish(.presence)
                case .peers: hub.publish(.peers)
                case .typing(let partition, let user):
                    let nick = try? await read { try $0.directory.profile(user)?.nick }
                    hub.publish(.typing(partition: partition, user: user.text, nick: nick ?? nil))
                }
            }
        }
        let heartbeat = Task { [hub] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(15))
                hub.heartbeat()
            }
        }
        tasks.set([events, heartbeat])
    }

    func stopWatching() {
        tasks.cancelAll()
        hub.closeAll()
        reads.close()
    }
}

/// The watching tasks, cancelled at stop.
private final class TaskBox: Sendable {
    private let tasks = Mutex<[Task<Void, Never>]>([])

    func set(_ new: [Task<Void, Never>]) { tasks.withLock { $0 = new } }
    func cancelAll() { for task in tasks.withLock({ $0 }) { task.cancel() } }
}
