import Foundation
import Identity
import NodeRuntime
import Replica
import Store

/// How the web API reaches the node and its store: reads and writes on a connection of its own
/// to the node's SQLite file (WAL), each write followed by a poke so the node pushes the new ops
/// to its peers at once; live events from watching the file and the node's peer table.
///
/// Every call runs under one lock (one connection, one thread at a time); before each, a change
/// of `PRAGMA data_version` (another connection committed: the node applied ops from a peer)
/// makes the connection forget its caches, as the node does for the command line's writes.
public final class NodeAccess: @unchecked Sendable {
    public let identity: Identity
    let node: Node
    let hub = EventHub()
    private let store: ReplicaStore
    private let lock = NSLock()
    private var dataVersion: Int64 = 0
    private var watcher: Task<Void, Never>?

    /// Opens the store at `databasePath` with `identity`'s keys.
    public init(node: Node, identity: Identity, databasePath: String) throws {
        self.node = node
        self.identity = identity
        store = try ReplicaStore(path: databasePath)
        try store.useIdentity(identity)
        dataVersion = try store.dataVersion
    }

    /// Runs `body` against the store (for reads).
    func read<T>(_ body: (ReplicaStore) throws -> T) throws -> T {
        try lock.withLock {
            try refreshIfChanged()
            return try body(store)
        }
    }

    /// Runs `body` against the store in one transaction, then has the node push what it wrote and
    /// tells the open pages.
    func write<T: Sendable>(_ body: (ReplicaStore) throws -> T) async throws -> T {
        let (result, changed) = try lock.withLock { () -> (T, Bool) in
            try refreshIfChanged()
            let before = store.database.totalChanges
            let result = try body(store)
            return (result, store.database.totalChanges != before)
        }
        if changed {
            _ = await node.respond(to: ControlRequest(.poke))
            hub.publish(.changed([]))
        }
        return result
    }

    /// What the node's links say about each peer, for `ReplicaStore.people(me:search:live:)`.
    func livePresence() async -> [UserID: PeerPresence] {
        var live: [UserID: PeerPresence] = [:]
        for peer in await node.peers() {
            guard let user = UserID(text: peer.id) else { continue }
            live[user] = PeerPresence(linked: peer.state == "linked", lastSeenMillis: peer.lastSeen)
        }
        return live
    }

    /// Tells peers this user is typing in `partition`. (The node's typing frames are not there
    /// yet; until they are, only this node's pages hear of it.)
    func typing(in partition: PartitionID, nick: String?) {
        hub.publish(.typing(partition: partition, user: identity.id.text, nick: nick))
    }

    private func refreshIfChanged() throws {
        let version = try store.dataVersion
        guard version != dataVersion else { return }
        dataVersion = version
        try store.refreshAfterExternalWrite()
        _ = try store.processInbox(me: identity)
    }

    // MARK: Watching

    /// Starts watching for changes: the store file every 250 ms, the peer table every second, a
    /// heartbeat on every stream every 15 s.
    func startWatching() {
        watcher = Task { [weak self] in
            var lastPeers: [PeerReport] = []
            var tick = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                guard let self else { return }
                tick += 1
                let changed =
                    (try? self.lock.withLock { () -> Bool in
                        let version = try self.store.dataVersion
                        guard version != self.dataVersion else { return false }
                        try self.refreshIfChanged()
                        return true
                    }) ?? false
                if changed { self.hub.publish(.changed([])) }
                if tick % 4 == 0 {
                    let peers = await self.node.peers()
                    if peers.map({ [$0.id, $0.state] }) != lastPeers.map({ [$0.id, $0.state] }) {
                        lastPeers = peers
                        self.hub.publish(.peers)
                        self.hub.publish(.presence)
                    }
                }
                if tick % 60 == 0 { self.hub.heartbeat() }
            }
        }
    }

    func stopWatching() {
        watcher?.cancel()
        hub.closeAll()
    }
}
