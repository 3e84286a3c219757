import Gossip
import Identity
import LinkProtocol
import Replica
import Store

/// The handler's part in what user interfaces see: pushing the node's own writes at once,
/// typing indicators both ways, and telling subscribers what changed.
extension GossipHandler {
    public func nodeWroteStore(node: isolated Node) {
        // A read marker or a profile field may change no op: interfaces re-read what they show.
        if checkLocalWrites(node: node, ownWrite: true) == 0 { node.emit(.changed([])) }
    }

    // MARK: - Typing

    public func sendTyping(in partition: PartitionID, node: isolated Node) {
        let frame = SyncFrame(type: TypingMessage.type, payload: TypingMessage.body(partition))
        for peer in typingAudience(partition, node: node) { _ = node.send(frame, to: peer) }
    }

    /// The linked peers allowed to hear that this user types in `partition`: anyone linked for a
    /// joined room, the current members for a conversation the user is in, nobody otherwise
    /// (carriers never learn who types in a conversation they carry).
    func typingAudience(_ partition: PartitionID, node: isolated Node) -> [UserID] {
        let store = node.store!
        guard let record = try? store.log.partition(partition) else { return [] }
        switch record.descriptor {
        case .room:
            return record.joined ? sessions.keys.sorted() : []
        case .conversation:
            guard let members = (try? store.views.conversation(partition))??.members.current, members.contains(node.identity.id) else { return [] }
            return sessions.keys.filter { members.contains($0) }.sorted()
        case .privateRoom:
            // A node cannot tell a linked holder from a carrier, and a TYPING frame names the
            // partition and who types: in a private room nobody is told.
            return []
        case .directory, .inbox, .ownData:
            return []
        }
    }

    /// A TYPING frame from `peer`: shown if this node holds the partition and the peer may write
    /// there; a malformed body breaks the sync protocol.
    func receivedTyping(_ payload: [UInt8], from peer: UserID, node: isolated Node) throws(LinkViolation) {
        let partition: PartitionID
        do {
            partition = try TypingMessage.partition(fromBody: payload)
        } catch {
            throw LinkViolation("malformed TYPING: \(error)")
        }
        guard let record = try? node.store.log.partition(partition) else { return }
        switch record.descriptor {
        case .room:
            guard record.joined else { return }
        case .conversation:
            guard let members = (try? node.store.views.conversation(partition))??.members.current,
                members.contains(peer), members.contains(node.identity.id)
            else { return }
        case .directory, .inbox, .ownData, .privateRoom:
            return
        }
        node.emit(.typing(partition: partition, user: peer))
    }

    // MARK: - Changes

    /// Tells subscribers about ops that were applied, and whether the set of partitions changed.
    /// With nobody subscribed (a node without a terminal or web interface, the benchmark's) no
    /// set of partitions is built: about 1,800 of the 3,200 instructions this took per delivery.
    func announce(applied ops: some Sequence<Operation>, partitionsChanged: Bool, node: isolated Node) {
        guard !node.eventHub.isEmpty else {
            var applied = ops.makeIterator()
            if applied.next() != nil { blobScanDue = true }
            return
        }
        let partitions = Set(ops.map(\.partition))
        if !partitions.isEmpty {
            node.emit(.changed(partitions))
            blobScanDue = true
        }
        if partitionsChanged { node.emit(.partitions) }
    }
}
