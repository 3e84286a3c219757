import Identity

/// LAN discovery as a pure state machine: sends and reads authenticated beacons, keeps the peer
/// table, and decides whom to dial and when (docs/DESIGN.md §4.1).
///
/// The shell feeds events — `start`, `onBeacon`, `onTick`, link outcomes, static peers, address
/// lists — with its monotonic clock in milliseconds, and performs the returned
/// `DiscoveryDirective`s in order. The instance owns no socket, timer or clock; it asks for a
/// tick with `.scheduleTick(after:)` only when its next deadline changes.
///
/// Rules it follows:
/// - Beacons go to every target at the current interval: `fastInterval` for `fastPeriod` after
///   the start and after a new peer appears (a new identity, a restart, a return from `gone`),
///   then doubling from `stableInterval.lowerBound` to its upper bound. A new peer with the
///   smaller key (it dials us, so it needs our beacon) gets the next one `newcomerReplyDelay`
///   after our last, not a whole interval later. Every beacon carries the interval until the
///   next one, and receivers expire the sender after three of them.
/// - Received datagrams are rate-limited per source address before they are read, then
///   authenticated; our own beacons are ignored; a beacon MUST carry a seq above the last one
///   seen from its (identity, instance), else it is a replay and is ignored.
/// - Who dials: a static peer is always dialed. Any other peer is dialed by the side with the
///   smaller key (bytewise), so two nodes do not dial each other at once; the larger side dials
///   too once the peer has stayed unlinked for `fallbackDialDelay` (one-way reachability). If both
///   links complete anyway, the link layer keeps the one dialed by the smaller key.
/// - Reconnect: a failed dial or a lost link waits 1 s, 2 s, 4 s, … up to 30 s before the next
///   dial (per peer); a link coming up resets the backoff. A peer that is gone is not dialed.
///
/// What the shell MUST do, and nothing more:
/// - keep one timer, re-armed by every `.scheduleTick(after:)`, and call `onTick` when it fires;
/// - pass each datagram's source address as `from`, in the textual form it dials;
/// - report the outcome of every `.connect` (`onLinkEstablished(peer:via:)` or `onDialFailed`),
///   the end of every link (`onLinkLost`), and link pings (`onLinkPing`);
/// - now and then send `shareableAddresses(for:)` to each linked peer (`PeerAddressList`), and
///   pass lists received to `onPeerAddresses`;
/// - call `stop` on a clean shutdown and send its leaving beacons before closing the socket.
public struct Discovery: Sendable {
    enum Phase: Sendable { case idle, running, stopped }

    public let configuration: DiscoveryConfiguration
    var phase = Phase.idle

    // Peer table.
    var records = PeerTable()
    var keylessStatic: [PeerEndpoint: DialSchedule] = [:]
    var dialBudget: DialBudget

    // Received beacons.
    var sources: SourceTable
    var counters = DiscoveryDiagnostics()
    var duplicateInstances: [InstanceID] = []

    // Our beacons.
    var seq: UInt64 = 0
    /// The interval announced in our latest beacon (what receivers expect).
    public private(set) var currentInterval: UInt64
    var fastUntil: UInt64 = 0
    var nextBeaconAt: UInt64 = 0
    var lastBeaconAt: UInt64?

    /// The tick the shell was last asked for, to ask again only when it changes.
    var requestedTick: UInt64?

    /// The overlay's picks and pins (`Overlay.swift`).
    var overlay: OverlayState

    public init(configuration: DiscoveryConfiguration) {
        configuration.validate()
        self.configuration = configuration
        sources = SourceTable(
            capacity: configuration.maxSources, beaconsPerSecond: configuration.beaconsPerSecond,
            burst: configuration.beaconBurst)
        currentInterval = configuration.fastInterval
        dialBudget = DialBudget(perSecond: configuration.dialsPerSecond, burst: configuration.dialBurst)
        overlay = OverlayState(seed: configuration.randomSeed)
    }

    // MARK: - Snapshots

    /// The peer table, sorted by id (`parley peers`).
    public var peers: [PeerInfo] { records.keys.sorted().map { records[$0]!.info() } }

    /// One peer's entry, if known.
    public func peer(_ id: UserID) -> PeerInfo? { records[id]?.info() }

    /// When this node will next dial `peer`, if it will (nil: linked, gone, no address, or the
    /// peer's job by the key-order rule with no fallback): `parley doctor` shows backoffs.
    public func nextDialTime(for peer: UserID) -> UInt64? {
        records[peer].flatMap { dialTime(of: $0, overlayActive: overlayIsActive) }
    }

    /// When `record` is to be dialed: by the overlay's picks when it is active (static and
    /// pinned peers aside), else by the key-order rule (`PeerRecord.dialTime`).
    func dialTime(of record: PeerRecord, overlayActive: Bool) -> UInt64? {
        guard let wanted = overlayWantsDial(record, active: overlayActive) else {
            return record.dialTime(ownID: configuration.identity, configuration)
        }
        guard wanted, record.link == nil, !record.addresses.isEmpty, record.state != .gone else { return nil }
        return record.dial.notBefore
    }

    /// Static peers listed without a key whose key is still unknown, with their next dial time.
    public var keylessStaticPeers: [(endpoint: PeerEndpoint, nextDial: UInt64)] {
        keylessStatic.keys.sorted().map { ($0, keylessStatic[$0]!.notBefore) }
    }

    /// Counters for `parley doctor`.
    public var diagnostics: DiscoveryDiagnostics {
        var snapshot = counters
        snapshot.sources = sources.snapshot
        snapshot.staticPeers = keylessStatic.count + records.values.reduce(0) { $0 + $1.staticEndpoints.count }
        return snapshot
    }

    // MARK: - Start and stop

    /// Starts beaconing (fast) and dials the static peers added so far. MUST be called once.
    public mutating func start(now: UInt64) -> [DiscoveryDirective] {
        guard phase == .idle else { preconditionFailure("invalid state \(phase): start called twice") }
        phase = .running
        fastUntil = now + configuration.fastPeriod
        nextBeaconAt = now
        var directives: [DiscoveryDirective] = []
        advance(now: now, into: &directives)
        return directives
    }

    /// Sends a leaving beacon to every target, so peers mark this node gone at once; every later
    /// event is ignored.
    public mutating func stop(now: UInt64) -> [DiscoveryDirective] {
        guard phase == .running else { return [] }
        phase = .stopped
        var directives: [DiscoveryDirective] = []
        sendBeacons(now: now, leaving: true, into: &directives)
        return directives
    }

    /// The time has come (or passed) for a deadline requested with `.scheduleTick`.
    public mutating func onTick(now: UInt64) -> [DiscoveryDirective] {
        guard phase == .running else { return [] }
        if let requestedTick, now >= requestedTick { self.requestedTick = nil }
        var directives: [DiscoveryDirective] = []
        advance(now: now, into: &directives)
        return directives
    }

    // MARK: - The step every event ends with

    /// Does whatever is due at `now` — beacons, state changes, forgetting, dials — and asks for
    /// a tick at the next deadline.
    mutating func advance(now: UInt64, into directives: inout [DiscoveryDirective]) {
        guard phase == .running else { return }
        if now >= nextBeaconAt { sendBeacons(now: now, leaving: false, into: &directives) }
        var next = nextBeaconAt
        if let rotation = updateOverlay(now: now, into: &directives) { next = min(next, max(rotation, now + 1)) }
        let overlayActive = configuration.overlay != nil && overlayIsActive
        // Peers linked before and static ones come first, so they get the dials when the dial
        // budget is short (a flood of made-up identities).
        let order = records.map { (trusted: $0.value.everLinked || $0.value.isStatic, id: $0.key) }
            .sorted { $0.trusted != $1.trusted ? $0.trusted : $0.id < $1.id }
        for (_, id) in order {
            var record = records[id]!
            updateState(&record, now: now, into: &directives)
            if let forget = record.forgetTime(configuration) {
                if now >= forget {
                    records[id] = nil
                    directives.append(.peerForgotten(id))
                    continue
                }
                next = min(next, forget)
            }
            if let dialTime = dialTime(of: record, overlayActive: overlayActive) {
                if now >= dialTime, let endpoint = record.addresses.first {
                    if dialBudget.take(now: now) {
                        record.dial.dialed(now: now, timeout: configuration.dialTimeout)
                        directives.append(.connect(peer: id, at: endpoint))
                        next = min(next, record.dial.notBefore)
                    } else {
                        counters.dialsDeferred += 1
                        next = min(next, dialBudget.nextTokenAt(now: now))
                    }
                } else if dialTime > now {
                    next = min(next, dialTime)
                }
            }
            if let change = record.nextStateChange(after: now, configuration) { next = min(next, onStateCheckGrid(change)) }
            records[id] = record
        }
        for endpoint in keylessStatic.keys.sorted() {
            if now >= keylessStatic[endpoint]!.notBefore {
                guard dialBudget.take(now: now) else {
                    counters.dialsDeferred += 1
                    next = min(next, dialBudget.nextTokenAt(now: now))
                    continue
                }
                keylessStatic[endpoint]!.dialed(now: now, timeout: configuration.dialTimeout)
                directives.append(.connect(peer: nil, at: endpoint))
            }
            next = min(next, keylessStatic[endpoint]!.notBefore)
        }
        if next != requestedTick, next > now {
            requestedTick = next
            directives.append(.scheduleTick(after: next - now))
        }
    }

    /// `time` rounded up to the grid state changes fall due on (`stateCheckGranularity`).
    func onStateCheckGrid(_ time: UInt64) -> UInt64 {
        let grid = max(1, configuration.stateCheckGranularity)
        return (time + grid - 1) / grid * grid
    }

    /// Brings `record.state` up to date with its evidence, reporting a change.
    func updateState(_ record: inout PeerRecord, now: UInt64, into directives: inout [DiscoveryDirective]) {
        let state = record.liveState(now: now, configuration)
        guard state != record.state else { return }
        record.state = state
        record.since = now
        record.goneAt = state == .gone ? now : nil
        directives.append(.peerStateChanged(record.id, state))
    }

    // MARK: - Our beacons

    /// One beacon to every target (each with its own seq), then the next beacon time.
    mutating func sendBeacons(now: UInt64, leaving: Bool, into directives: inout [DiscoveryDirective]) {
        if !leaving, lastBeaconAt != nil {
            if now < fastUntil {
                currentInterval = configuration.fastInterval
            } else if currentInterval < configuration.stableInterval.lowerBound {
                currentInterval = configuration.stableInterval.lowerBound
            } else {
                currentInterval = min(currentInterval * 2, configuration.stableInterval.upperBound)
            }
        }
        for target in configuration.targets {
            seq += 1
            let beacon = Beacon(
                isLeaving: leaving, tcpPort: configuration.tcpPort, instanceID: configuration.instanceID,
                identity: configuration.identity, seq: seq, interval: UInt32(currentInterval))
            directives.append(.sendBeacon(beacon.encoded(key: configuration.beaconKey), to: target))
            counters.beaconsSent += 1
        }
        lastBeaconAt = now
        nextBeaconAt = now + currentInterval
    }

    /// A new peer appeared: beacon fast again, so it learns about us quickly. A peer that will
    /// dial us (`willDialUs`: its key is the smaller) needs our beacon to do so, and gets the next
    /// one `newcomerReplyDelay` after the last; any other at most one per `fastInterval`. So a
    /// stream of newcomers cannot make us beacon more than five times a `fastInterval`.
    mutating func speedUp(now: UInt64, willDialUs: Bool) {
        fastUntil = now + configuration.fastPeriod
        let gap = willDialUs ? configuration.newcomerReplyDelay : configuration.fastInterval
        let soonest = max(now, (lastBeaconAt ?? now) + gap)
        nextBeaconAt = min(nextBeaconAt, soonest)
    }
}

/// What a `Discovery` instance asks its shell to do. The shell performs each one in order and
/// makes no protocol decision of its own.
public enum DiscoveryDirective: Sendable, Equatable {
    /// Send these bytes as one UDP datagram to `to` (with `SO_BROADCAST` for broadcast targets).
    case sendBeacon([UInt8], to: PeerEndpoint)

    /// Dial `at` over TCP and run the handshake expecting `peer`. Report the outcome with
    /// `onLinkEstablished(peer:via:now:)` or `onDialFailed(peer:at:now:)`.
    ///
    /// `peer` is nil only for a static peer listed without a key: the secret handshake needs the
    /// listener's key up front, so the shell must learn it first (or report the dial as failed;
    /// Discovery learns the key from that host's beacon if it ever hears one, and then emits a
    /// `.connect` with the key). The shell SHOULD skip the dial when a link to `peer` is already up.
    case connect(peer: UserID?, at: PeerEndpoint)

    /// A peer entered the table. Its later changes come as `.peerStateChanged`.
    case peerDiscovered(PeerInfo)

    /// A known peer changed state (including to `.gone`).
    case peerStateChanged(UserID, PeerState)

    /// A peer left the table: gone for `forgetAfter`, or replaced to keep the table within
    /// `maxPeers`. The shell SHOULD drop it from its views.
    case peerForgotten(UserID)

    /// Another process runs with our identity (a beacon with our key and another instance id)
    /// at this source address. Reported once per foreign instance; both nodes will fight over
    /// links, so the shell SHOULD warn the user loudly.
    case duplicateIdentity(PeerEndpoint)

    /// Call `onTick(now:)` after this many milliseconds, replacing any earlier request: the shell
    /// keeps one timer per instance.
    case scheduleTick(after: UInt64)

    /// Close the link to this peer (`ByeReason.overlay`): the overlay keeps enough links (a
    /// link the peer dialed beyond `maxLinks`, or a pick swapped for another). Report its end
    /// with `onLinkLost` as usual.
    case disconnect(UserID)
}
