import Discovery
import Gossip
import LinkProtocol
import Replica
import Transport

/// Everything `parley run` decides before a node starts. Times are milliseconds.
public struct NodeConfiguration: Sendable {
    /// docs/DESIGN.md §7: TCP port 7748.
    public static let defaultListenPort: UInt16 = 7748
    /// docs/DESIGN.md §7: UDP discovery port 7747.
    public static let defaultDiscoveryPort: UInt16 = 7747
    /// The loopback broadcast, always a target, so nodes on one host find each other.
    public static let loopbackBroadcast = "127.255.255.255"

    /// The data directory (absolute): `identity.key`, `parley.db`, `control.sock`, `node.lock`.
    public var dataDirectory: String
    /// Where links are accepted: host (numeric or `0.0.0.0`) and port (0: any free port; beacons
    /// carry the bound one).
    public var listenHost = "0.0.0.0"
    public var listenPort = NodeConfiguration.defaultListenPort
    /// The UDP discovery port; nil turns discovery off (no beacons sent or heard).
    public var discoveryPort: UInt16? = NodeConfiguration.defaultDiscoveryPort
    /// Where beacons go (IPv4 addresses); nil: every interface's directed broadcast and
    /// `127.255.255.255` (`defaultBroadcastTargets`).
    public var broadcastTargets: [String]?
    /// Peers to dial whatever discovery finds (`--peers FILE`), and the file's path for doctor.
    public var staticPeers: [StaticPeer] = []
    public var peersFile: String?
    /// The deployment secret (`--network-secret-file`): nodes with different secrets never talk.
    public var networkSecret: [UInt8]?
    /// Rooms to join at start (`--join ROOM`).
    public var joinRooms: [RoomName] = []

    /// Links: ping, idle timeout, frame limits.
    public var link = LinkConfiguration()
    /// Caps on unauthenticated connections and bans.
    public var admission = AdmissionConfiguration()
    /// The whole handshake (or key probe) must finish within this (docs/DESIGN.md §4.2: 5 s).
    public var handshakeTimeout: UInt64 = 5_000
    /// Beacons: the fast interval and the ceiling the stable interval doubles up to.
    public var beaconInterval: UInt64 = 1_000
    public var maxBeaconInterval: UInt64 = 30_000
    /// The overlay's active size (`--active-peers`): past this many peers, about this many
    /// links to random ones instead of a link to each (nil: the full mesh).
    public var activePeers: Int?
    /// How often linked peers are sent our address list (and right after a link is ready).
    public var addressShareInterval: UInt64 = 30_000
    /// Sync: limits and the anti-entropy interval of each link's `GossipSession`.
    public var gossip = GossipConfiguration()

    /// What each link's session runs with: with the overlay, anti-entropy with a few links per
    /// interval and the broadcast tree if asked. In a full mesh each author is one hop from
    /// everyone, and one pusher per chain (the author) delivers each op once in one hop, where a
    /// tree would take several (docs/DESIGN.md §4.3.3).
    var linkGossip: GossipConfiguration { gossip.onOverlay(activeSize: activePeers) }
    /// How often the node checks `PRAGMA data_version` for ops another process wrote (a command
    /// that did not poke, or whose poke failed). Default 250 ms.
    public var localWritePollInterval: UInt64 = 250
    /// How often a typing user's node repeats its TYPING frame for one partition: often enough
    /// that `NodeEvent.typingShownFor` (6 s) never lapses while the user types, rarely enough
    /// that typing costs a few bytes a second at most. Default 3 s.
    public var typingRepeatInterval: UInt64 = 3_000
    /// Faults fixed at start (clock skew), for the lab; see `FaultInjection.swift`.
    public var faults = FaultConfiguration()

    public init(dataDirectory: String) {
        self.dataDirectory = dataDirectory
    }

    /// The control socket's path.
    public var controlSocketPath: String { dataDirectory + "/control.sock" }
    /// The store's path.
    public var databasePath: String { dataDirectory + "/parley.db" }
    /// The store key's path (`StoreKeyFile`): the key `parley.db` is encrypted under.
    public var storeKeyPath: String { dataDirectory + "/store.key" }

    /// Every up interface's directed broadcast, then the loopback broadcast, without repeats.
    public static func defaultBroadcastTargets(_ interfaces: [NetworkInterface]) -> [String] {
        var targets: [String] = []
        for interface in interfaces where interface.isUp && !interface.isLoopback {
            if let broadcast = interface.directedBroadcast, !targets.contains(broadcast) { targets.append(broadcast) }
        }
        if !targets.contains(loopbackBroadcast) { targets.append(loopbackBroadcast) }
        return targets
    }

    /// The Discovery timing for these settings: the stable interval starts at
    /// `min(5 s, maxBeaconInterval)` and doubles up to `maxBeaconInterval`; link liveness follows
    /// the link's ping interval.
    func discoveryTiming(_ discovery: inout DiscoveryConfiguration) {
        discovery.fastInterval = beaconInterval
        let ceiling = max(maxBeaconInterval, beaconInterval)
        discovery.stableInterval = min(5_000, ceiling)...ceiling
        discovery.linkPingInterval = link.pingInterval
        discovery.dialTimeout = max(discovery.dialTimeout, handshakeTimeout * 2 + 1_000)
        discovery.overlay = activePeers.map { OverlayConfiguration(activeSize: $0) }
        discovery.randomSeed = UInt64.random(in: .min ... .max)
    }
}

/// Why a node could not start. Descriptions are one line naming the problem and the fix.
public enum NodeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Another node holds the data directory's lock.
    case alreadyRunning(directory: String, pid: Int32?)
    /// A file of the data directory cannot be used.
    case dataDirectory(String)
    /// The store could not be opened.
    case store(String)
    /// A socket could not be bound: `what` says which ("links", "discovery", "control socket").
    case bind(what: String, TransportError)

    public var description: String {
        switch self {
        case .alreadyRunning(let directory, let pid):
            "a parley node is already running for \(directory)" + (pid.map { " (pid \($0))" } ?? "")
                + "; stop it first, or use another --data-dir"
        case .dataDirectory(let message), .store(let message):
            message
        case .bind(let what, let error):
            "cannot open the \(what) socket: \(error)"
        }
    }
}
