import Identity

/// Dials allowed to start, all peers together: a token bucket (`DiscoveryConfiguration
/// .dialsPerSecond`, `.dialBurst`) in thousandths of a dial, so refill is exact in milliseconds.
struct DialBudget: Sendable, Equatable {
    private let perSecond: UInt64
    private let burst: UInt64
    private var credit: UInt64
    private var refilledAt: UInt64?

    init(perSecond: UInt64, burst: UInt64) {
        self.perSecond = perSecond
        self.burst = burst * 1_000
        credit = burst * 1_000
    }

    /// Takes one dial if the budget has one at `now`.
    mutating func take(now: UInt64) -> Bool {
        refill(now: now)
        guard credit >= 1_000 else { return false }
        credit -= 1_000
        return true
    }

    /// When the next dial will be in the budget (now, if one is).
    func nextTokenAt(now: UInt64) -> UInt64 {
        var copy = self
        copy.refill(now: now)
        guard copy.credit < 1_000 else { return now }
        return now + (1_000 - copy.credit + perSecond - 1) / perSecond
    }

    private mutating func refill(now: UInt64) {
        defer { refilledAt = max(refilledAt ?? now, now) }
        guard let last = refilledAt, now > last else { return }
        let gained = (now - last).multipliedReportingOverflow(by: perSecond)
        credit = gained.overflow ? burst : min(burst, credit + gained.partialValue)
    }
}

/// When the next dial to one peer (or keyless static endpoint) may happen: exponential backoff
/// over consecutive failures, reset by a link.
///
/// Delays: `backoff.lowerBound << failures`, capped at `backoff.upperBound` — with the defaults
/// 1 s, 2 s, 4 s, 8 s, 16 s, 30 s, 30 s, …
struct DialSchedule: Sendable, Equatable {
    /// Consecutive failures (dial failures and lost links) since the last link came up.
    var failures = 0
    /// No dial before this time.
    var notBefore: UInt64 = 0
    /// A `.connect` went out and its outcome has not been reported (until `notBefore`).
    var inFlight = false
    /// When the last `.connect` went out (nil: none since the last link came up).
    var lastDialed: UInt64?

    static func delay(afterFailures failures: Int, backoff: ClosedRange<UInt64>) -> UInt64 {
        guard failures < 63, backoff.lowerBound <= backoff.upperBound >> UInt64(failures) else { return backoff.upperBound }
        return backoff.lowerBound << UInt64(failures)
    }

    /// A `.connect` went out: hold further attempts until the outcome (or the timeout).
    mutating func dialed(now: UInt64, timeout: UInt64) {
        notBefore = now + timeout
        inFlight = true
        lastDialed = now
    }

    /// A dial failed or a link was lost: wait the next backoff delay.
    mutating func failed(now: UInt64, backoff: ClosedRange<UInt64>) {
        notBefore = now + Self.delay(afterFailures: failures, backoff: backoff)
        failures += 1
        inFlight = false
    }

    /// A link came up: the backoff starts over.
    mutating func succeeded() {
        self = DialSchedule()
    }

    /// The peer restarted or came back: dial at once, unless a dial is already under way or
    /// the last one went out less than `floor` ago. A beacon proves nothing, so forged ones that
    /// claim a restart each time (a fresh instance id) get at most one dial per `floor`, not one
    /// per beacon.
    mutating func retrySoon(floor: UInt64) {
        failures = 0
        if !inFlight { notBefore = lastDialed.map { $0 + floor } ?? 0 }
    }
}

/// A live link, as far as Discovery knows it.
struct LinkRecord: Sendable {
    var since: UInt64
    var lastPing: UInt64
}

/// One entry of the peer table. Internal: the outside world sees `PeerInfo`.
struct PeerRecord: Sendable {
    /// The instances heard from this identity, the current (latest) first, with their highest
    /// seq: the replay filter. Bounded, so a peer restarting often cannot grow it.
    static let maxInstances = 4

    let id: UserID
    let origin: PeerOrigin
    /// The state last reported to the shell.
    var state: PeerState
    var since: UInt64
    /// The last direct evidence: a beacon, a link coming up, a ping.
    var lastSeen: UInt64?
    /// The last time a linked peer's address list named it (evidence for candidates only).
    var lastMentioned: UInt64?
    /// The announced (clamped) beacon interval; nil until a beacon is heard.
    var beaconInterval: UInt64?
    var instances: [(id: InstanceID, lastSeq: UInt64)] = []
    /// Its current instance sent a leaving beacon, and nothing has been heard since.
    var hasLeft = false
    /// Endpoints from the peers file (never trimmed; the peer is never forgotten).
    var staticEndpoints: [PeerEndpoint] = []
    /// TCP endpoints to dial, preferred first.
    var addresses: [PeerEndpoint] = []
    /// The latest endpoint it was heard at (a beacon) or linked through (our dial).
    var provenAddress: PeerEndpoint?
    var link: LinkRecord?
    /// A link to it came up at least once: its identity was proven by a handshake, which a
    /// forged beacon cannot do. Such peers (and static ones) are dialed first when dials are short.
    var everLinked = false
    var dial = DialSchedule()
    /// Since when it has been alive and unlinked: the larger key's fallback dial counts from here.
    var unlinkedSince: UInt64
    var goneAt: UInt64?

    init(id: UserID, origin: PeerOrigin, state: PeerState = .discovered, now: UInt64) {
        self.id = id
        self.origin = origin
        self.state = state
        since = now
        unlinkedSince = now
    }

    var isStatic: Bool { !staticEndpoints.isEmpty }

    func info() -> PeerInfo {
        PeerInfo(
            id: id, state: state, origin: origin, isStatic: isStatic, addresses: addresses, since: since,
            lastSeen: lastSeen)
    }

    // MARK: Liveness

    /// The latest evidence and the period it is expected in; nil when the peer cannot expire
    /// (an unlinked static peer).
    func evidence(_ config: DiscoveryConfiguration) -> (last: UInt64, period: UInt64)? {
        if let link { return (max(link.since, link.lastPing), config.linkPingInterval) }
        if isStatic { return nil }
        return (lastSeen ?? lastMentioned ?? since, beaconInterval ?? config.unheardPeriod)
    }

    /// The state the evidence shows at `now` (see `PeerState`).
    func liveState(now: UInt64, _ config: DiscoveryConfiguration) -> PeerState {
        if hasLeft { return .gone }
        let healthy: PeerState = link == nil ? .discovered : .linked
        guard let (last, period) = evidence(config) else { return healthy }
        if now >= last + 3 * period { return .gone }
        if now >= last + 2 * period { return .suspect }
        return healthy
    }

    /// The next time `liveState` changes by itself, if it does.
    func nextStateChange(after now: UInt64, _ config: DiscoveryConfiguration) -> UInt64? {
        guard !hasLeft, let (last, period) = evidence(config) else { return nil }
        return [last + 2 * period, last + 3 * period].first { $0 > now }
    }

    /// When a gone, unlinked, non-static peer leaves the table.
    func forgetTime(_ config: DiscoveryConfiguration) -> UInt64? {
        guard state == .gone, link == nil, !isStatic, let goneAt else { return nil }
        return goneAt + config.forgetAfter
    }

    // MARK: Dialing

    /// The earliest time this node may dial the peer, or nil if it must not (linked, gone, no
    /// address, or the other side's job by the key-order rule without a fallback).
    func dialTime(ownID: UserID, _ config: DiscoveryConfiguration) -> UInt64? {
        guard link == nil, !addresses.isEmpty else { return nil }
        if isStatic { return dial.notBefore }
        guard state != .gone else { return nil }
        if ownID < id { return dial.notBefore }
        guard let fallback = config.fallbackDialDelay else { return nil }
        return max(dial.notBefore, unlinkedSince + fallback)
    }

    // MARK: Addresses

    /// Puts `endpoint` first (it was just heard from, or a link came up through it).
    mutating func prefer(_ endpoint: PeerEndpoint, limit: Int) {
        addresses.removeAll { $0 == endpoint }
        addresses.insert(endpoint, at: 0)
        trimAddresses(limit: limit)
    }

    /// Adds `endpoint` last unless it is known (an address list's hint is the least trusted).
    mutating func addFallback(_ endpoint: PeerEndpoint, limit: Int) {
        guard !addresses.contains(endpoint) else { return }
        addresses.append(endpoint)
        trimAddresses(limit: limit)
    }

    /// Moves a failed endpoint to the back, so the next dial tries another one.
    mutating func demote(_ endpoint: PeerEndpoint) {
        guard let index = addresses.firstIndex(of: endpoint) else { return }
        addresses.append(addresses.remove(at: index))
    }

    /// Keeps at most `limit` non-static endpoints, dropping the least preferred.
    private mutating func trimAddresses(limit: Int) {
        var kept = 0
        addresses.removeAll { endpoint in
            if staticEndpoints.contains(endpoint) { return false }
            kept += 1
            return kept > limit
        }
    }
}
