import Identity
import Replica
import Store

/// What user interfaces in the node's process (the web UI, an in-process terminal chat) use:
/// live events, store access on the node's executor, typing indicators and presence. Interfaces
/// in another process get the same through the control socket (`watch`, `typing`, `presence`).
extension Node {
    // MARK: - Events

    /// A new subscription to the node's events; it ends when the node stops (or the caller
    /// stops iterating). Buffers the newest `EventHub.bufferSize` events.
    public func events() -> AsyncStream<NodeEvent> {
        let (id, stream) = eventHub.subscribe { id in Task { await self.unsubscribe(id) } }
        if phase == .stopping || phase == .stopped { eventHub.remove(id) }
        return stream
    }

    private func unsubscribe(_ id: UInt64) {
        eventHub.remove(id)
    }

    /// Hands `event` to every subscriber.
    public func emit(_ event: NodeEvent) {
        eventHub.publish(event)
    }

    // MARK: - Store access

    /// Runs `body` against the node's store on the node's executor, then hands every op it wrote
    /// to the linked peers at once and tells subscribers what changed. Throws what `body` throws,
    /// or `NodeError.store` when the node is not running.
    public func write<T: Sendable>(_ body: @Sendable (ReplicaStore) throws -> T) throws -> T {
        guard isRunning, let store else { throw NodeError.store("the node is not running") }
        // From here the store keeps this write's ops: the handler hands over those, and
        // `author` counts them.
        store.log.markOpInserts()
        // The watch ends when this returns or throws (by then the handler has taken the ops).
        defer { _ = store.log.takeOpsSinceMark() }
        // The peers get the news before this node waits for its disk: the write is durable
        // before this returns (and the person is answered), but a push need not wait for it.
        return try store.database.deferringDurableSync {
            let result = try body(store)
            handler.nodeWroteStore(node: self)
            return result
        }
    }

    /// Runs `body` against the node's store on the node's executor (reads; a write made here is
    /// only pushed to peers at the next poll — use `write` for writes).
    public func read<T: Sendable>(_ body: @Sendable (ReplicaStore) throws -> T) throws -> T {
        guard isRunning, let store else { throw NodeError.store("the node is not running") }
        return try body(store)
    }

    // MARK: - Typing and presence

    /// Tells the linked peers who may see `partition` that this user is typing there. Call it on
    /// keystrokes: it sends at most one frame per partition every
    /// `configuration.typingRepeatInterval`.
    public func typing(in partition: PartitionID) {
        guard isRunning else { return }
        let now = clock.now()
        if let last = typingSentAt[partition], now < last + configuration.typingRepeatInterval { return }
        typingSentAt[partition] = now
        if typingSentAt.count > 1_024 { typingSentAt = typingSentAt.filter { now < $0.value + configuration.typingRepeatInterval } }
        handler.sendTyping(in: partition, node: self)
    }

    /// What the links and beacons say about each peer: linked now, and when last seen (Unix
    /// milliseconds), for `Directory.people(me:search:live:)`.
    public func livePresence() -> [UserID: PeerPresence] {
        var presence: [UserID: PeerPresence] = [:]
        for info in discovery?.peers ?? [] {
            presence[info.id] = PeerPresence(linked: current[info.id] != nil, lastSeenMillis: info.lastSeen.map { clock.wallMillis(at: $0) })
        }
        for peer in current.keys { presence[peer] = PeerPresence(linked: true, lastSeenMillis: wallMillis) }
        return presence
    }
}

extension Node {
    /// The peers a TYPING frame for `partition` would go to now (for tests of who may hear it).
    func typingAudience(in partition: PartitionID) -> [UserID] {
        (handler as? GossipHandler)?.typingAudience(partition, node: self) ?? []
    }

    /// The ops the handler found in the store after writes and handed to the sessions, in all
    /// (for tests of what an own write re-reads).
    var localOpsFound: Int { (handler as? GossipHandler)?.localOpsFound ?? 0 }
}
