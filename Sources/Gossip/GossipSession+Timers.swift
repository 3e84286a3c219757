/// The clock: periodic anti-entropy. (Keepalive pings and the idle timeout are the link's.)
extension GossipSession {
    /// The timer fired. Every `antiEntropyInterval` drops stale rounds and claims, and every
    /// `antiEntropyStride`-th one asks for fresh summaries (`.refreshSummaries`), so entries that
    /// changed are re-sent and a missed push is repaired; gathered announcements go out and
    /// announced gaps the tree did not fill are fetched (`+Tree`). Always ends with the next
    /// `.scheduleTick`.
    public mutating func onTick(now: UInt64) -> [GossipDirective] {
        guard begin(now) else { return [] }
        let now = self.now
        if now >= nextAntiEntropy {
            nextAntiEntropy = now + configuration.antiEntropyInterval
            dropStaleExchanges()
            releaseStaleClaims()
            antiEntropyIntervals += 1
            if antiEntropyIntervals % configuration.antiEntropyStride == 0 {
                antiEntropyDue = true
                emit(.refreshSummaries)
            }
        }
        if let due = announceDue, due <= now { flushAnnouncements() }
        fetchOverdueGrafts()
        scheduleWake(always: true)
        return finish()
    }

    /// Asks the shell to wake the session at its next deadline (anti-entropy, announcements,
    /// grafts). The shell keeps one timer that each `.scheduleTick` re-arms, so one is emitted
    /// only when the deadline moves earlier than the one asked, or `always` (after a tick).
    mutating func scheduleWake(always: Bool = false) {
        var next = nextAntiEntropy
        if let due = announceDue { next = min(next, due) }
        if let due = graftCheckAt { next = min(next, due) }
        guard always || next < wakeAt else { return }
        wakeAt = next
        emit(.scheduleTick(after: next > now ? next - now : 0))
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
