import Identity
import Replica

/// Push control, after Scuttlebutt's Epidemic Broadcast Trees: in a mesh every node relays what
/// it applies, so without it each op reaches each node once per peer. A node keeps one pusher
/// per chain (the node decides which link: `.pushReceived`) and asks every other link that
/// pushes a duplicate to SKIP the chain; when the pusher's link ends, or a skipped peer turns
/// out to be ahead, it asks for the chain again (RESUME). Anti-entropy stays the safety net: a
/// chain nobody pushes is still fetched by the next vector round.
///
/// Used on a link only when both sides announce `SyncHello.pushControl` and not both the
/// broadcast tree (`+Tree`, which replaces it); a peer that did not is never sent SKIP or
/// RESUME, and its SKIPs are ignored.
extension GossipSession {
    /// The node saw a duplicate NEW_OP of this chain from this session's peer, and another link
    /// is the chain's pusher: asks the peer to stop pushing it (once, within `maxSkippedChains`;
    /// beyond that duplicates are tolerated rather than skips forgotten, since a forgotten SKIP
    /// could not be resumed).
    public mutating func onRedundantPush(_ partition: PartitionID, author: UserID, now: UInt64) -> [GossipDirective] {
        guard begin(now) else { return [] }
        let key = ChainKey(partition: partition, author: author)
        guard pushControl, !treePush, shared[partition] != nil, !skipsSent.contains(key), skipsSent.count < configuration.maxSkippedChains else {
            return finish()
        }
        skipsSent.insert(key)
        send(.skip([key]))
        return finish()
    }

    /// The links that pushed these chains to this node ended: the chains this session asked its
    /// peer to skip are asked for again.
    public mutating func onPushersLost(_ chains: [ChainKey], now: UInt64) -> [GossipDirective] {
        guard begin(now) else { return [] }
        resume(chains.filter { skipsSent.contains($0) })
        return finish()
    }

    /// Sends RESUME for `chains` (in pages) and forgets that they were skipped.
    mutating func resume(_ chains: [ChainKey]) {
        guard pushControl, !chains.isEmpty else { return }
        for key in chains { skipsSent.remove(key) }
        var start = 0
        while start < chains.count {
            let end = min(start + SyncMessage.maxPushControlChains, chains.count)
            send(.resume(Array(chains[start..<end])))
            start = end
        }
    }

    /// A SKIP from the peer: this session stops pushing those chains (at most
    /// `maxSkippedChains` remembered; the oldest is forgotten, so its pushes resume).
    mutating func receiveSkip(_ chains: [ChainKey]) {
        guard pushControl else { return }
        for key in chains where sentDigests[key.partition] != nil && !skippedByPeer.contains(key) {
            if skippedByPeer.count >= configuration.maxSkippedChains {
                while let oldest = skippedOrder.popFirst() {
                    if skippedByPeer.remove(oldest) != nil { break }
                }
            }
            skippedByPeer.insert(key)
            skippedOrder.append(key)
            statistics.skipsReceived += 1
        }
        // Resumed chains leave stale entries behind: rebuild before the queue grows unbounded.
        if skippedOrder.count > 2 * configuration.maxSkippedChains {
            var fresh = Queue<ChainKey>()
            var seen: Set<ChainKey> = []
            while let key = skippedOrder.popFirst() {
                if skippedByPeer.contains(key), seen.insert(key).inserted { fresh.append(key) }
            }
            skippedOrder = fresh
        }
    }

    /// A RESUME from the peer: this session pushes those chains again, starting with the next
    /// new op whatever the peer is known to hold (the peer fetches a gap with a WANT). A vector
    /// round of each partition follows at once, so what the peer missed meanwhile arrives even
    /// if no new op comes.
    mutating func receiveResume(_ chains: [ChainKey]) {
        guard pushControl else { return }
        var partitions: [PartitionID] = []
        for key in chains {
            skippedByPeer.remove(key)
            guard shared[key.partition] != nil else { continue }
            var chain = self.chain(key) ?? Chain()
            chain.resumed = true
            setChain(key, chain)
            if !partitions.contains(key.partition) { partitions.append(key.partition) }
        }
        for id in partitions { startExchange(id) }
    }
}
