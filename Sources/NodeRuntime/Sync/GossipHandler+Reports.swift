import Gossip
import Identity
import LinkProtocol

/// Progress and counters: the `sync` section of `parley status`, and progress in the log.
extension GossipHandler {
    /// A fetch with at least this many ops left is long work: its progress is logged (at info,
    /// at most once a second per peer), and its end.
    static let longFetch = 100

    public func syncStatus(node: isolated Node) -> SyncStatus {
        var status = SyncStatus()
        status.fetched = UInt64(closedTotals.fetched)
        status.opsReceived = UInt64(closedTotals.opsReceived)
        status.opsSent = UInt64(closedTotals.opsSent)
        // Several peers usually offer the same missing ops: they count once, as the most any
        // one peer shows.
        var missing = 0
        for (peer, entry) in sessions.sorted(by: { $0.key < $1.key }) {
            let statistics = entry.session.statistics
            let link = node.linkTraffic(of: peer)
            status.fetched += UInt64(entry.progress.fetched)
            missing = max(missing, entry.progress.wanted - entry.progress.fetched)
            status.opsReceived += UInt64(statistics.opsReceived)
            status.opsSent += UInt64(statistics.opsSent)
            status.wantsOutstanding += UInt64(entry.session.wantsOutstanding)
            status.peers.append(
                SyncPeerStatus(
                    id: peer.text, nick: node.nick(of: peer), fetched: UInt64(entry.progress.fetched),
                    wanted: UInt64(entry.progress.wanted), opsReceived: UInt64(statistics.opsReceived),
                    opsSent: UInt64(statistics.opsSent), skipsReceived: UInt64(statistics.skipsReceived), traffic: link?.traffic ?? LinkTraffic(),
                    since: link?.since ?? 0))
        }
        status.wanted = status.fetched + UInt64(missing)
        return status
    }

    /// `.progress`: kept for `status`; logged while a long fetch runs ("fetching: 1,200 / 5,000
    /// ops from bob#k3v9q2") and when it ends.
    func noteProgress(fetched: Int, wanted: Int, from peer: UserID, node: isolated Node) {
        guard let entry = sessions[peer] else { return }
        entry.progress = (fetched, wanted)
        let now = node.monotonicMillis
        let left = wanted - fetched
        if left >= Self.longFetch, entry.progressLoggedAt.map({ now >= $0 + 1_000 }) ?? true {
            node.log.info(.syncProgress, "fetching: \(Self.grouped(fetched)) / \(Self.grouped(wanted)) ops from \(node.displayName(of: peer))")
            entry.progressLoggedAt = now
        } else if left == 0, entry.progressLoggedAt != nil {
            node.log.info(.syncProgress, "caught up with \(node.displayName(of: peer)): \(Self.grouped(fetched)) ops fetched")
            entry.progressLoggedAt = nil
        }
    }

    /// `1200` as `1,200`.
    static func grouped(_ value: Int) -> String {
        let digits = Array(String(value.magnitude))
        var text = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { text.append(",") }
            text.append(digit)
        }
        return (value < 0 ? "-" : "") + text
    }
}
