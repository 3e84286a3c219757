import Identity

/// How alive a peer looks from here; the `state` of `parley peers --json` (docs/DESIGN.md §6.1).
///
/// Evidence and its period: for a linked peer, link pings every `linkPingInterval` (and the link
/// itself); otherwise beacons, every interval the peer announces; a peer known only from a link
/// or from another peer's address list uses `unheardPeriod`. A static peer that is not linked
/// stays `discovered` (it is always worth dialing) unless it announced that it is leaving.
public enum PeerState: String, Sendable, Equatable, CaseIterable {
    /// Heard (beacons, a static entry, an address list) and not linked.
    case discovered
    /// A link to it is up and pinging.
    case linked
    /// Evidence is more than one period late (two periods since the last): maybe gone.
    case suspect
    /// Three periods without evidence, or it sent a leaving beacon.
    case gone
}

/// How this node first learned about a peer.
public enum PeerOrigin: String, Sendable, Equatable {
    /// A beacon on the LAN.
    case beacon
    /// The static peers file.
    case staticFile = "static"
    /// A linked peer's address list (unproven until a handshake).
    case exchanged
    /// A link came up before any beacon, static entry or address list named it.
    case link
}

/// A snapshot of one peer-table entry, for `.peerDiscovered` and `Discovery.peers`.
public struct PeerInfo: Sendable, Equatable {
    public var id: UserID
    public var state: PeerState
    public var origin: PeerOrigin
    /// Whether the peers file lists it (it is dialed whatever the key order, and never forgotten).
    public var isStatic: Bool
    /// TCP endpoints to dial, preferred first (the latest beacon source first).
    public var addresses: [PeerEndpoint]
    /// When `state` last changed (milliseconds, the shell's clock).
    public var since: UInt64
    /// The last beacon, ping or link event from it; nil if only heard about.
    public var lastSeen: UInt64?

    public init(
        id: UserID, state: PeerState, origin: PeerOrigin, isStatic: Bool, addresses: [PeerEndpoint],
        since: UInt64, lastSeen: UInt64?
    ) {
        self.id = id
        self.state = state
        self.origin = origin
        self.isStatic = isStatic
        self.addresses = addresses
        self.since = since
        self.lastSeen = lastSeen
    }
}

/// One entry of a static peers file: where to dial, and whom to expect there if known.
public struct StaticPeer: Sendable, Equatable {
    public var endpoint: PeerEndpoint
    /// The identity expected at `endpoint`; nil when the file gives no key (see `PeersFile`).
    public var key: UserID?

    public init(endpoint: PeerEndpoint, key: UserID? = nil) {
        self.endpoint = endpoint
        self.key = key
    }
}

/// A peer's identity and an endpoint where it may be dialed: the unit of address exchange.
public struct PeerAddress: Sendable, Equatable {
    public var peer: UserID
    public var endpoint: PeerEndpoint

    public init(peer: UserID, endpoint: PeerEndpoint) {
        self.peer = peer
        self.endpoint = endpoint
    }
}
