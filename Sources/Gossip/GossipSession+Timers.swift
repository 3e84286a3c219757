/// The clock: periodic anti-entropy. (Keepalive pings and the idle timeout are the link's.)
extension GossipSession {
    /// The timer fired. Every `antiEntropyInterval` asks for fresh summaries
    /// (`.refreshSummaries`), so entries that changed are re-sent and a missed push is repaired.
    /// Always ends with the next `.scheduleTick`.
    public mutating func onTick(now: UInt64) -> [GossipDirective] {
        guard begin(now) else { return [] }
        let now = self.now
        if now >= nextAntiEntropy {
            nextAntiEntropy = now + configuration.antiEntropyInterval
            antiEntropyDue = true
            dropStaleExchanges()
            releaseStaleClaims()
            emit(.refreshSummaries)
        }
        emit(.scheduleTick(after: nextAntiEntropy - now))
        return finish()
    }

    /// Forgets vector rounds open for a whole interval (the peer never sent its vector).
    mutating func dropStaleExchanges() {
        for (id, partition) in shared {
            guard let exchange = partition.exchange, exchange.startedAt + configuration.antiEntropyInterval <= now else { continue }
            bufferedRemoteHeads -= exchange.remote.count
            shared[id]?.exchange = nil
        }
    }
}
