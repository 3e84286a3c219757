import Identity

/// Limits and timing of `Admission` (docs/DESIGN.md §4.2, §7). Times are milliseconds.
public struct AdmissionConfiguration: Sendable, Equatable {
    /// Connections accepted but not yet authenticated (handshake or probe under way), in total.
    public var maxUnauthenticated = 64
    /// The same, from one IP address.
    public var maxUnauthenticatedPerHost = 8
    /// Links (authenticated, either direction) at once, in total. Identities cost nothing, so
    /// "one link per identity" alone would let one machine hold any number of links, each with
    /// its descriptor, buffers and session; this bounds them (as many as the peer table holds).
    public var maxLinks = 256
    /// The same, with one IP address (several nodes may share a machine; loopback is exempt
    /// unless `exemptLoopback` is off, like the other per-address rules).
    public var maxLinksPerHost = 16
    /// Violations within `violationWindow` that start a ban.
    public var violationsBeforeBan = 3
    public var violationWindow: UInt64 = 60_000
    /// How long a ban lasts.
    public var banDuration: UInt64 = 600_000
    /// Whether loopback addresses skip the per-host cap and host bans (default): every node on
    /// one host connects from 127.0.0.1, so a ban would cut off every local node along with the
    /// offender, and a local process can do worse than send garbage. Identity bans still apply.
    public var exemptLoopback = true
    /// Bans remembered at most (the oldest expires first when full), so a scan of many
    /// addresses cannot grow memory.
    public var maxBans = 1_024

    public init() {}
}

/// Who may open a connection, and who is banned: caps on unauthenticated connections and
/// temporary bans after repeated violations, as pure bookkeeping the node consults.
///
/// The node calls `admit` for every accepted TCP connection before reading a byte, `release`
/// when that connection is authenticated or closed, and `recordViolation` whenever a peer
/// breaks a rule (garbage instead of a handshake, a stalled handshake, a malformed or
/// unauthenticated frame). Violations are counted per host and per identity; reaching
/// `violationsBeforeBan` within `violationWindow` bans that host or identity for `banDuration`.
public struct Admission: Sendable {
    /// Why a connection is refused.
    public enum Refusal: Sendable, Equatable {
        case tooManyUnauthenticated(limit: Int)
        case tooManyFromHost(limit: Int)
        case banned(until: UInt64)
        /// An authenticated connection that would make one link too many.
        case tooManyLinks(limit: Int)
        case tooManyLinksWithHost(limit: Int)
    }

    /// A ban that one violation started.
    public enum Ban: Sendable, Equatable {
        case host(String, until: UInt64)
        case peer(UserID, until: UInt64)
    }

    /// What `snapshot` shows (`parley doctor`).
    public struct Snapshot: Sendable, Equatable {
        public var unauthenticated: Int
        public var refused: UInt64
        /// Of `refused`, the authenticated connections refused a link (`admitLink`): the log shows
        /// only some of them (`LogLimiter`), this counts all.
        public var linksRefused: UInt64
        public var violations: UInt64
        /// Banned hosts and when each ban ends.
        public var bannedHosts: [String: UInt64]
        /// Banned identities and when each ban ends.
        public var bannedPeers: [UserID: UInt64]
    }

    public let configuration: AdmissionConfiguration
    private var pendingByHost: [String: Int] = [:]
    private var pendingTotal = 0
    private var hostStrikes: [String: [UInt64]] = [:]
    private var peerStrikes: [UserID: [UInt64]] = [:]
    private var hostBans: [String: UInt64] = [:]
    private var peerBans: [UserID: UInt64] = [:]
    private var refusedCount: UInt64 = 0
    private var linksRefusedCount: UInt64 = 0
    private var violationCount: UInt64 = 0

    public init(configuration: AdmissionConfiguration = AdmissionConfiguration()) {
        self.configuration = configuration
    }

    /// Decides on a connection from `host` (an unmapped numeric IP). On nil it is admitted and
    /// counted: call `release(host:)` exactly once when it is authenticated or closed.
    public mutating func admit(host: String, now: UInt64) -> Refusal? {
        let refusal = refusalReason(host: host, now: now)
        if refusal != nil {
            refusedCount += 1
            return refusal
        }
        pendingTotal += 1
        pendingByHost[host, default: 0] += 1
        return nil
    }

    /// Decides whether an authenticated connection with `host` (inbound or dialed) may become a
    /// link, given the links the node has: `withHost` of them with that address, `total` in all.
    /// A refusal is counted like a refused connection.
    public mutating func admitLink(host: String, withHost: Int, total: Int) -> Refusal? {
        var refusal: Refusal?
        if total >= configuration.maxLinks {
            refusal = .tooManyLinks(limit: configuration.maxLinks)
        } else if !(configuration.exemptLoopback && Self.isLoopback(host)), withHost >= configuration.maxLinksPerHost {
            refusal = .tooManyLinksWithHost(limit: configuration.maxLinksPerHost)
        }
        if refusal != nil {
            refusedCount += 1
            linksRefusedCount += 1
        }
        return refusal
    }

    /// An admitted connection from `host` finished its unauthenticated phase.
    public mutating func release(host: String) {
        guard let count = pendingByHost[host] else { return }
        pendingTotal -= 1
        pendingByHost[host] = count > 1 ? count - 1 : nil
    }

    /// Until when `peer` is banned, if it is at `now`.
    public func banExpiry(peer: UserID, now: UInt64) -> UInt64? {
        peerBans[peer].flatMap { $0 > now ? $0 : nil }
    }

    /// Until when `host` is banned, if it is at `now`.
    public func banExpiry(host: String, now: UInt64) -> UInt64? {
        hostBans[host].flatMap { $0 > now ? $0 : nil }
    }

    /// Counts a violation by the connection from `host` (nil: unknown) proved as `peer` (nil:
    /// not authenticated); returns the bans it starts.
    public mutating func recordViolation(host: String?, peer: UserID?, now: UInt64) -> [Ban] {
        violationCount += 1
        expire(now: now)
        var bans: [Ban] = []
        if let host, !(configuration.exemptLoopback && Self.isLoopback(host)), strike(&hostStrikes[host, default: []], now: now) {
            hostStrikes[host] = nil
            hostBans[host] = now + configuration.banDuration
            bans.append(.host(host, until: now + configuration.banDuration))
        }
        if let peer, strike(&peerStrikes[peer, default: []], now: now) {
            peerStrikes[peer] = nil
            peerBans[peer] = now + configuration.banDuration
            bans.append(.peer(peer, until: now + configuration.banDuration))
        }
        trim()
        return bans
    }

    /// The current counts and bans at `now`.
    public func snapshot(now: UInt64) -> Snapshot {
        Snapshot(
            unauthenticated: pendingTotal, refused: refusedCount, linksRefused: linksRefusedCount, violations: violationCount,
            bannedHosts: hostBans.filter { $0.value > now }, bannedPeers: peerBans.filter { $0.value > now })
    }

    /// Whether `host` is a loopback address (127.0.0.0/8 or ::1).
    public static func isLoopback(_ host: String) -> Bool {
        host.hasPrefix("127.") || host == "::1"
    }

    // MARK: Internals

    private func refusalReason(host: String, now: UInt64) -> Refusal? {
        if let until = banExpiry(host: host, now: now) { return .banned(until: until) }
        if pendingTotal >= configuration.maxUnauthenticated {
            return .tooManyUnauthenticated(limit: configuration.maxUnauthenticated)
        }
        let exempt = configuration.exemptLoopback && Self.isLoopback(host)
        if !exempt, pendingByHost[host, default: 0] >= configuration.maxUnauthenticatedPerHost {
            return .tooManyFromHost(limit: configuration.maxUnauthenticatedPerHost)
        }
        return nil
    }

    /// Adds a strike at `now` to `strikes` (dropping those outside the window); true when the
    /// count reaches the ban threshold.
    private func strike(_ strikes: inout [UInt64], now: UInt64) -> Bool {
        strikes.removeAll { $0 + configuration.violationWindow <= now }
        strikes.append(now)
        return strikes.count >= configuration.violationsBeforeBan
    }

    private mutating func expire(now: UInt64) {
        hostBans = hostBans.filter { $0.value > now }
        peerBans = peerBans.filter { $0.value > now }
        hostStrikes = hostStrikes.filter { $0.value.contains { $0 + configuration.violationWindow > now } }
        peerStrikes = peerStrikes.filter { $0.value.contains { $0 + configuration.violationWindow > now } }
    }

    /// Keeps the tables within `maxBans` entries each, dropping the earliest expiries.
    private mutating func trim() {
        let limit = configuration.maxBans
        if hostBans.count > limit {
            for (host, _) in hostBans.sorted(by: { $0.value < $1.value }).prefix(hostBans.count - limit) { hostBans[host] = nil }
        }
        if peerBans.count > limit {
            for (peer, _) in peerBans.sorted(by: { $0.value < $1.value }).prefix(peerBans.count - limit) { peerBans[peer] = nil }
        }
        if hostStrikes.count > limit { hostStrikes = [:] }
        if peerStrikes.count > limit { peerStrikes = [:] }
    }
}
