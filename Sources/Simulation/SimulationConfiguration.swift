import Discovery

/// What a simulated run is: how many nodes, for how long, on what network, with what faults.
/// Times are simulated milliseconds.
public struct SimulationConfiguration: Sendable {
    public var nodes: Int
    public var seed: UInt64
    /// The overlay every node runs; nil: the full mesh.
    public var overlay: OverlayConfiguration? = OverlayConfiguration()
    /// How long the run lasts.
    public var duration: UInt64 = 300_000
    /// Nodes start at random times within this many milliseconds.
    public var startSpread: UInt64 = 10_000
    /// One-way latency of a message, drawn uniformly from this range.
    public var latency: ClosedRange<UInt64> = 1...5
    /// The chance that one beacon does not reach one node.
    public var beaconLoss = 0.01
    /// The fraction of nodes that crash once during the run, each back after `downtime`.
    public var churn = 0.0
    public var downtime: UInt64 = 20_000
    /// Time left at the end with no crash planned, for the overlay to settle.
    public var settle: UInt64 = 60_000
    /// When the network splits in two halves, and when it heals.
    public var partition: Range<UInt64>?
    /// Links are alive while pings pass; one across a partition ends after `idleTimeout`.
    public var pingInterval: UInt64 = 15_000
    public var idleTimeout: UInt64 = 45_000
    /// Each node's peer table (Discovery's `maxPeers`).
    public var maxPeers = 256

    public init(nodes: Int, seed: UInt64) {
        self.nodes = nodes
        self.seed = seed
    }
}

/// What a run measured of the link graph at its end.
public struct OverlayReport: Sendable, Equatable, Codable {
    public struct Links: Sendable, Equatable, Codable {
        public var max: Int
        public var mean: Double
    }
    public struct Hops: Sendable, Equatable, Codable {
        public var p50: Int
        public var p95: Int
        public var p99: Int
        public var max: Int
    }
    public var seed: UInt64
    public var nodes: Int
    /// Nodes running at the end.
    public var running: Int
    /// Whether the running nodes form one component.
    public var connected: Bool
    public var linksPerNode: Links
    /// Hops between nodes, from up to 32 random sources to every node they reach.
    public var hops: Hops
    /// From the end of the partition to the first link across it again (nil: no partition, or
    /// it never healed).
    public var healMillis: UInt64?
    public var dials: Int
    public var dialsFailed: Int
    public var disconnects: Int
    public var crashes: Int
    public var beaconsDelivered: Int
}
