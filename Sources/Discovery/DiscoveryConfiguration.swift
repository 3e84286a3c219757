import Identity

/// Everything a `Discovery` instance is told at creation: who we are, where beacons go, and the
/// timing and limits of docs/DESIGN.md §4.1 and §7. Times are milliseconds.
public struct DiscoveryConfiguration: Sendable {
    // MARK: Who we are

    /// Our identity (the user id in our beacons).
    public var identity: UserID
    /// This process's random instance id (`InstanceID.random()` once per process start).
    public var instanceID: InstanceID
    /// The TCP port our listener accepts links on; announced in beacons. MUST NOT be 0.
    public var tcpPort: UInt16
    /// The MAC key of beacons (`BeaconKey(networkKey:)`).
    public var beaconKey: BeaconKey
    /// Where beacons go: directed broadcast addresses at the discovery port, chosen by the shell
    /// (on the project's machines: only `127.255.255.255` or addresses inside test namespaces).
    /// Unicast addresses work too, e.g. static peers' hosts on networks without broadcast.
    public var targets: [PeerEndpoint]

    // MARK: Beacon timing

    /// The beacon interval at start and after a new peer appears (~1 s).
    public var fastInterval: UInt64 = 1_000
    /// How soon after our last beacon a new peer that will dial us (its key is the smaller)
    /// hears the next one: a fifth of `fastInterval`. Nodes that start together would otherwise
    /// wait a whole interval for the beacon their dial needs.
    public var newcomerReplyDelay: UInt64 { max(1, fastInterval / 5) }
    /// How long beacons stay fast after the start or a new peer.
    public var fastPeriod: UInt64 = 10_000
    /// Once stable, the interval doubles from the lower bound up to the upper bound.
    public var stableInterval: ClosedRange<UInt64> = 5_000...30_000
    /// A received beacon's announced interval is clamped into this range before use, so a
    /// hostile or buggy sender can neither expire itself at once nor linger for hours.
    public var acceptedInterval: ClosedRange<UInt64> = 250...120_000

    // MARK: Liveness

    /// How often a link pings (docs/DESIGN.md §4.2, 15 s): the evidence period of a linked peer.
    public var linkPingInterval: UInt64 = 15_000
    /// The evidence period of a peer known only from a link or an address list (no beacons).
    public var unheardPeriod: UInt64 = 60_000
    /// Peers' state changes (stale, gone) fall due on a grid of this many milliseconds, so one
    /// tick checks all that fell due within it: each peer's deadline moves with each of its
    /// beacons, and a tick per deadline would walk the whole table about once per beacon heard.
    /// A change is noticed at most this late.
    public var stateCheckGranularity: UInt64 = 1_000
    /// How long a gone peer stays in the table (and `parley peers`) before it is forgotten.
    public var forgetAfter: UInt64 = 600_000

    // MARK: Dialing

    /// Reconnect backoff: the first delay, doubled per failure up to the upper bound.
    public var reconnectBackoff: ClosedRange<UInt64> = 1_000...30_000
    /// After emitting `.connect`, how long to wait for `onLinkEstablished`/`onDialFailed` before
    /// another attempt is allowed (a safety net; the shell SHOULD always report the outcome).
    public var dialTimeout: UInt64 = 15_000
    /// How long the peer with the larger key waits for the smaller one to dial before it dials
    /// too (covers one-way reachability: a firewall, a NAT). nil: never.
    public var fallbackDialDelay: UInt64? = 15_000

    // MARK: Limits

    /// Peers heard from beacons, address lists and inbound links (static entries do not count,
    /// the peers file has its own limit). When full, the least recently seen unlinked entry is
    /// replaced; if every entry is linked or static, the newcomer is dropped and counted.
    public var maxPeers = 256
    /// Endpoints remembered per peer (a multi-homed peer is heard from several).
    public var maxAddressesPerPeer = 4
    /// Beacons accepted per second from one source address (token bucket refill rate).
    public var beaconsPerSecond: UInt64 = 10
    /// Burst size of the per-source token bucket.
    public var beaconBurst: UInt64 = 20
    /// Whether loopback sources skip the rate limit (default): every node on one host sends
    /// from the same loopback address, so a lab of 30 local nodes would otherwise trip it, and a
    /// local process can do worse than flood. Datagrams are still counted per source.
    public var exemptLoopbackFromRateLimit = true
    /// Source addresses tracked for rate limiting and diagnostics.
    public var maxSources = 1_024
    /// Dials started per second, all peers together (token bucket refill rate). Every beacon of
    /// a new identity asks for a dial, and identities cost nothing, so without it a beacon flood
    /// turns into a connection flood from this node (SECURITY.md). Peers that were linked before
    /// are dialed first when dials are short.
    public var dialsPerSecond: UInt64 = 20
    /// Burst size of the dial bucket: a node that starts among 40 peers dials them all at once.
    public var dialBurst: UInt64 = 40
    /// Foreign instances of our own identity remembered (each reported once).
    public var maxDuplicateInstances = 8

    // MARK: The overlay

    /// The bounded-degree overlay (`OverlayConfiguration`); nil: the full mesh, every peer heard
    /// is linked.
    public var overlay: OverlayConfiguration?
    /// Seeds the overlay's random picks: the same seed, the same picks (the simulator); a node
    /// takes one from the system's generator.
    public var randomSeed: UInt64 = 0

    public init(identity: UserID, instanceID: InstanceID, tcpPort: UInt16, beaconKey: BeaconKey, targets: [PeerEndpoint]) {
        self.identity = identity
        self.instanceID = instanceID
        self.tcpPort = tcpPort
        self.beaconKey = beaconKey
        self.targets = targets
    }

    /// Checks the values that would make the instance misbehave; called by `Discovery.init`.
    func validate() {
        precondition(tcpPort != 0, "tcpPort must not be 0")
        precondition(fastInterval > 0 && stableInterval.lowerBound > 0, "beacon intervals must be positive")
        precondition(
            max(fastInterval, stableInterval.upperBound) <= UInt64(UInt32.max),
            "beacon intervals must fit the beacon's u32")
        precondition(acceptedInterval.lowerBound > 0, "accepted intervals must be positive")
        precondition(linkPingInterval > 0 && unheardPeriod > 0, "liveness periods must be positive")
        precondition(reconnectBackoff.lowerBound > 0 && dialTimeout > 0, "dial delays must be positive")
        precondition(maxPeers > 0 && maxAddressesPerPeer > 0 && maxSources > 0, "limits must be positive")
        precondition(beaconsPerSecond > 0 && beaconBurst > 0, "the beacon rate must be positive")
        precondition(dialsPerSecond > 0 && dialBurst > 0, "the dial rate must be positive")
    }
}
