/// Counters for `parley doctor`: what was heard, from where, and why beacons were dropped.
///
/// A snapshot (`Discovery.diagnostics`); counters only grow while the instance lives.
public struct DiscoveryDiagnostics: Sendable, Equatable {
    /// The rejections of one kind, and the source of the latest.
    public struct Rejection: Sendable, Equatable {
        public var count: UInt64
        public var lastSource: PeerEndpoint

        public init(count: UInt64, lastSource: PeerEndpoint) {
            self.count = count
            self.lastSource = lastSource
        }
    }

    /// What one source address sent (bounded to `maxSources` addresses, least recent dropped).
    public struct Source: Sendable, Equatable {
        public var host: String
        /// Datagrams received from it, whatever happened to them.
        public var heard: UInt64 = 0
        /// Datagrams that failed `Beacon(decoding:)`.
        public var rejected: UInt64 = 0
        /// Datagrams dropped by the rate limit before being read.
        public var rateLimited: UInt64 = 0
        /// When the latest datagram arrived.
        public var lastHeard: UInt64 = 0
    }

    /// Beacons handed to the shell (one per target per round).
    public var beaconsSent: UInt64 = 0
    /// Beacons that passed every check and updated the peer table.
    public var accepted: UInt64 = 0
    /// Our own beacons heard back (proof that sending and receiving work on this host).
    public var ownBeaconsHeard: UInt64 = 0
    /// Valid beacons whose seq was not above the last one of that instance: replays, or one
    /// datagram delivered twice.
    public var replayed: UInt64 = 0
    /// Datagrams dropped by a source's rate limit.
    public var rateLimited: UInt64 = 0
    /// Beacons carrying our identity from another instance.
    public var duplicateIdentity: UInt64 = 0
    /// New peers dropped because the table was full of linked and static peers.
    public var tableFull: UInt64 = 0
    /// Dials put off because the dial budget (`DiscoveryConfiguration.dialsPerSecond`) was spent.
    public var dialsDeferred: UInt64 = 0
    /// Rejected datagrams by reason.
    public var rejected: [BeaconError: Rejection] = [:]
    /// Per-source counters, sorted by host.
    public var sources: [Source] = []
    /// Static peers configured, keyless ones included.
    public var staticPeers = 0

    /// Total rejected datagrams, all reasons.
    public var rejectedTotal: UInt64 { rejected.values.reduce(0) { $0 + $1.count } }

    mutating func reject(_ error: BeaconError, from source: PeerEndpoint) {
        rejected[error, default: Rejection(count: 0, lastSource: source)].count += 1
        rejected[error]!.lastSource = source
    }
}

/// Per-source token buckets and counters, bounded in size: a flood from one address is dropped
/// before any decoding, while other addresses keep their own budget.
struct SourceTable: Sendable {
    private struct Entry: Sendable {
        /// Thousandths of a beacon, so refill is exact in integer milliseconds.
        var credit: UInt64
        var refilledAt: UInt64
        var stats: DiscoveryDiagnostics.Source
    }

    private var entries: [String: Entry] = [:]
    private let capacity: Int
    private let refillPerMillisecond: UInt64
    private let burst: UInt64

    init(capacity: Int, beaconsPerSecond: UInt64, burst: UInt64) {
        self.capacity = capacity
        refillPerMillisecond = beaconsPerSecond  // beaconsPerSecond × 1000 milli-beacons / 1000 ms
        self.burst = burst * 1_000
    }

    /// Counts a datagram from `host` and says whether it fits the source's budget (always, when
    /// not `limited`).
    mutating func admit(_ host: String, now: UInt64, limited: Bool = true) -> Bool {
        if entries[host] == nil {
            makeRoom(now: now)
            entries[host] = Entry(credit: burst, refilledAt: now, stats: .init(host: host))
        }
        var entry = entries[host]!
        refill(&entry, now: now)
        entry.stats.heard += 1
        entry.stats.lastHeard = now
        let admitted = !limited || entry.credit >= 1_000
        if !admitted {
            entry.stats.rateLimited += 1
        } else if limited {
            entry.credit -= 1_000
        }
        entries[host] = entry
        return admitted
    }

    /// Records that a datagram from `host` failed to decode.
    mutating func countRejected(_ host: String) {
        entries[host]?.stats.rejected += 1
    }

    var snapshot: [DiscoveryDiagnostics.Source] {
        entries.values.map(\.stats).sorted { $0.host < $1.host }
    }

    private func refill(_ entry: inout Entry, now: UInt64) {
        guard now > entry.refilledAt else { return }
        let gained = (now - entry.refilledAt).multipliedReportingOverflow(by: refillPerMillisecond)
        entry.credit = gained.overflow ? burst : min(burst, entry.credit + gained.partialValue)
        entry.refilledAt = now
    }

    /// Drops sources whose bucket has refilled (they carry no rate state); if none has, the one
    /// heard least recently.
    private mutating func makeRoom(now: UInt64) {
        guard entries.count >= capacity else { return }
        for (host, var entry) in entries {
            refill(&entry, now: now)
            if entry.credit == burst { entries[host] = nil }
        }
        if entries.count >= capacity, let oldest = entries.min(by: { $0.value.stats.lastHeard < $1.value.stats.lastHeard }) {
            entries[oldest.key] = nil
        }
    }
}
