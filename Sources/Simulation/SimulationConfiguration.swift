import Discovery

/// What a simulated run is: how many nodes, for how long, on what network, with what faults.
/// Times are simulated milliseconds.
public struct SimulationConfiguration: Sendable {
    public var nodes: Int
    public var seed: UInt64
    /// The overlay every node runs; nil: the full mesh.
    public var overlay: OverlayConfiguration? = OverlayConfiguration()
    /// Live push along the broadcast tree (PRUNE, GRAFT, ANNOUNCE) when the overlay runs
    /// (`parley run --push-tree`); false: one pusher per chain (SKIP, RESUME).
    public var treePush = false
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
    /// Posts written into the room by random running nodes, spread evenly between the start
    /// spread and `settle` before the end.
    public var writes = 0

    public init(nodes: Int, seed: UInt64) {
        self.nodes = nodes
        self.seed = seed
    }

    /// A run of `duration` milliseconds, whose last third (at most a minute) is left to settle:
    /// what `parley sim --duration` sets, so a replayed seed runs the same.
    public mutating func setDuration(_ duration: UInt64) {
        self.duration = duration
        settle = min(60_000, duration / 3)
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

/// What a run measured: the link graph at its end, and the delivery of its writes.
public struct SimulationReport: Sendable, Equatable {
    public var overlay: OverlayReport
    public var delivery: DeliveryReport

    /// The verdict: every replica converged with no write lost, no protocol broke, and no node
    /// holds more links than `bound`.
    public func holds(linkBound bound: Int) -> Bool {
        delivery.converged && delivery.violations == 0 && delivery.rejectedOps == 0 && delivery.unexpectedDirectives == 0
            && overlay.linksPerNode.max <= bound
    }
}

/// How the writes reached the nodes. Per op: each delivery is one op arriving new at one node
/// that did not write it.
public struct DeliveryReport: Sendable, Equatable, Codable {
    public struct Percentiles: Sendable, Equatable, Codable {
        public var p50: Int
        public var p95: Int
        public var p99: Int
        public var max: Int

        /// The percentiles of a histogram (value: count).
        init(_ histogram: [Int: Int]) {
            let total = histogram.values.reduce(0, +)
            let sorted = histogram.sorted { $0.key < $1.key }
            func percentile(_ p: Double) -> Int {
                guard total > 0 else { return 0 }
                let rank = Int((Double(total - 1) * p).rounded(.down))
                var seen = 0
                for (value, count) in sorted {
                    seen += count
                    if seen > rank { return value }
                }
                return sorted.last!.key
            }
            (p50, p95, p99, max) = (percentile(0.5), percentile(0.95), percentile(0.99), sorted.last?.key ?? 0)
        }
    }
    public var writes: Int
    /// Every node holds every write (equal digests).
    public var converged: Bool
    /// Writes some node does not hold at the end.
    public var lostWrites: Int
    /// Links a write took to reach each node, and simulated milliseconds.
    public var hops: Percentiles
    public var latencyMillis: Percentiles
    /// Ops received in NEW_OP and OPS messages per delivery (1: each node got each op once).
    public var copiesPerOp: Double
    /// Sync messages' bytes on the links (frames included) and messages, per delivery.
    public var bytesPerOp: Double
    public var messagesPerOp: Double
    /// From the last write (or the end of the partition, if later) to every write on every node.
    public var convergeMillis: UInt64?
    /// Each 0 in a sound run: links closed for a protocol violation, ops a replica refused,
    /// directives honest nodes never cause (fork proofs, unknown partitions).
    public var violations: Int
    public var rejectedOps: Int
    public var unexpectedDirectives: Int
}
