import Identity
import Wire

/// The bounded-degree overlay (docs/DESIGN.md §4.1.2): past a few peers a node no longer dials
/// everyone it hears. It keeps about `activeSize` links, to peers chosen uniformly at random
/// from its table (the passive view: everyone discovery and address exchange told it of), takes
/// links others chose up to `maxLinks`, replaces a lost link with another random pick, and every
/// `rotationInterval` either drops one of the links it dialed (when it has more than
/// `activeSize`) or dials one fresh pick (when it has not), so the graph stays a well-mixed
/// random graph (connected, small diameter, degrees near `activeSize`) as nodes come and go, and
/// heals across a partition that ends. Links up before the overlay took over (the full mesh of
/// the first few peers) count as picks when this node dialed them, so rotations shed them too. HyParView's active and passive views, with discovery as the passive view's source
/// instead of random walks: on a LAN every node hears the others' beacons.
public struct OverlayConfiguration: Sendable, Equatable {
    /// Links a node dials to on its own; with at most this many peers known, the overlay is off
    /// and every peer is linked (the full mesh, the key-order rule of §4.1).
    public var activeSize: Int
    /// Links a node keeps at most, its own picks and others' together; another link a peer dials
    /// is refused (`ByeReason.overlay`), unless it is pinned or static.
    public var maxLinks: Int
    /// Milliseconds between two swaps of one pick (each drawn from 0.5–1.5 times this).
    public var rotationInterval: UInt64

    public init(activeSize: Int = 8, maxLinks: Int? = nil, rotationInterval: UInt64 = 30_000) {
        self.activeSize = max(1, activeSize)
        self.maxLinks = max(self.activeSize, maxLinks ?? 2 * self.activeSize)
        self.rotationInterval = max(1, rotationInterval)
    }
}

/// The overlay's part of a `Discovery` instance's state.
struct OverlayState: Sendable, Equatable {
    /// Peers this node picked and dials (linked or not yet).
    var picks: Set<UserID> = []
    /// Peers whose link this node dialed (whatever the overlay was then): its own to drop.
    var dialed: Set<UserID> = []
    /// Peers the shell needs linked whatever the overlay says (a conversation's members): dialed
    /// by the key-order rule and never refused or dropped.
    var pinned: Set<UserID> = []
    var random: SeededRandom
    var nextRotationAt: UInt64?
    /// Counters for `parley doctor` and the simulator.
    var refused = 0
    var rotations = 0

    init(seed: UInt64) { random = SeededRandom(seed: seed) }
}

extension Discovery {
    /// Whether the overlay decides the dials now: it is configured, and more peers are known
    /// than its active size.
    var overlayIsActive: Bool {
        guard let overlay = configuration.overlay else { return false }
        return records.count - records.goneCount > overlay.activeSize
    }

    /// Peers the shell needs linked on top of the overlay (a private conversation's members);
    /// replaces the earlier set.
    public mutating func pin(_ peers: Set<UserID>, now: UInt64) -> [DiscoveryDirective] {
        guard phase == .running, peers != overlay.pinned else { return [] }
        overlay.pinned = peers.subtracting([configuration.identity])
        var directives: [DiscoveryDirective] = []
        advance(now: now, into: &directives)
        return directives
    }

    /// The links up now, and those this node picked (for `parley doctor` and the simulator).
    public var overlaySnapshot: (linked: Int, picks: Int, refused: Int, rotations: Int) {
        (records.linkedCount, overlay.picks.count, overlay.refused, overlay.rotations)
    }

    /// Whether `record` is to be dialed now by the overlay's rule (when it is active): a pick,
    /// pinned or static. Nil when the key-order rule decides (the overlay is off).
    func overlayWantsDial(_ record: PeerRecord, active: Bool) -> Bool? {
        guard active else { return nil }
        if record.isStatic || overlay.pinned.contains(record.id) { return nil }
        return overlay.picks.contains(record.id)
    }

    /// Whether the overlay decides `record`'s dials and has enough links and picks without it,
    /// so `advance` would not dial it now.
    func overlayWillNotDial(_ record: PeerRecord) -> Bool {
        guard let settings = configuration.overlay, overlay.nextRotationAt != nil, overlayWantsDial(record, active: overlayIsActive) == false
        else { return false }
        let pending = overlay.picks.filter { records[$0]?.link == nil }.count
        return records.linkedCount + pending >= settings.activeSize
    }

    /// Tops the picks up to `activeSize` links (counting picks still being dialed), forgets picks
    /// that are gone, and swaps one pick when a rotation is due. Called at the start of `advance`.
    mutating func updateOverlay(now: UInt64, into directives: inout [DiscoveryDirective]) -> UInt64? {
        guard let settings = configuration.overlay, overlayIsActive else {
            overlay.picks = []
            overlay.nextRotationAt = nil
            return nil
        }
        overlay.picks = overlay.picks.filter { records[$0].map { $0.state != .gone } ?? false }
        let rotationAt = overlay.nextRotationAt ?? now + jittered(settings.rotationInterval)
        overlay.nextRotationAt = rotationAt
        let linked = records.linkedCount
        if now >= rotationAt {
            overlay.nextRotationAt = now + jittered(settings.rotationInterval)
            // Beyond the active size, shed one link of this node's dialing; at it, dial one more.
            let own = overlay.picks.union(overlay.dialed).filter {
                records[$0]?.link != nil && !overlay.pinned.contains($0) && records[$0]?.isStatic != true
            }
            if linked > settings.activeSize, let victim = overlay.random.element(of: own.sorted()) {
                overlay.picks.remove(victim)
                overlay.dialed.remove(victim)
                overlay.rotations += 1
                directives.append(.disconnect(victim))
            } else if linked == settings.activeSize, pickOne(now: now) {
                overlay.rotations += 1
            }
        }
        // A dial already under way counts as a pick (one the full mesh started before the
        // overlay took over, as the peers heard grew past its size).
        for record in records.values where record.link == nil && record.dial.inFlight && !overlay.picks.contains(record.id) {
            overlay.picks.insert(record.id)
        }
        var pending = overlay.picks.filter { records[$0]?.link == nil }.count
        while linked + pending < settings.activeSize, pickOne(now: now) { pending += 1 }
        return overlay.nextRotationAt
    }

    /// Adds one random peer to the picks: heard (not gone), unlinked, with an address, not
    /// waiting out a backoff. False when there is none.
    private mutating func pickOne(now: UInt64) -> Bool {
        let candidates = records.values.filter { record in
            record.link == nil && record.state != .gone && !record.addresses.isEmpty && !overlay.picks.contains(record.id)
                && record.dial.notBefore <= now && !record.dial.inFlight
        }.map(\.id).sorted()
        guard let pick = overlay.random.element(of: candidates) else { return false }
        overlay.picks.insert(pick)
        return true
    }

    /// A new link beyond `maxLinks`, neither pinned nor static, is closed at once: one the peer
    /// dialed is refused (its dialer picks another), and one of this node's picks that came up
    /// after others' links filled the room is given up.
    mutating func refuseIfOverlayFull(_ peer: UserID, dialedByPeer: Bool, into directives: inout [DiscoveryDirective]) {
        if !dialedByPeer { overlay.dialed.insert(peer) }
        guard let settings = configuration.overlay, overlayIsActive, !overlay.pinned.contains(peer), records[peer]?.isStatic != true,
            records.linkedCount > settings.maxLinks
        else { return }
        overlay.refused += 1
        overlay.picks.remove(peer)
        overlay.dialed.remove(peer)
        directives.append(.disconnect(peer))
    }

    /// The next lost or failed link of `peer` is not this node's pick any more.
    mutating func dropPick(_ peer: UserID) {
        overlay.picks.remove(peer)
        overlay.dialed.remove(peer)
    }

    private mutating func jittered(_ interval: UInt64) -> UInt64 {
        interval / 2 + overlay.random.next(below: interval + 1)
    }
}
