import Foundation

/// `report.json`: the verdict and the numbers of one lab run. Keys are snake_case; the first
/// ones are a contract that scripts and tests rely on (`converged`, `convergence_seconds`,
/// `acknowledged_writes`, `lost_writes`, `latency_ms`, `ops_per_second`, `wire_bytes_per_op`,
/// `nodes[].peak_rss_bytes`); fields are added, never renamed.
public struct LabReport: Codable, Sendable {
    /// Every replica of every partition equal (on the nodes that should hold it) within the
    /// settle timeout after the last fault healed and the last write.
    public var converged: Bool
    /// Seconds from the later of the last heal and the last acknowledged write until all digests
    /// were equal; nil when they never were.
    public var convergenceSeconds: Double?
    public var acknowledgedWrites: Int
    /// Acknowledged writes missing on at least one node that should hold them.
    public var lostWrites: Int
    /// Writes a node refused (`ok: false`) or did not answer in time: not acknowledged, so not
    /// counted as lost (a write into a conversation the node just left, a paused node).
    public var refusedWrites: Int
    /// Writes the lab did not send because every node was still busy with its previous one
    /// (the cluster could not keep up with `--rate`); `ops_per_second` is what it achieved.
    public var skippedWrites: Int
    public var latencyMs: Latency
    /// Acknowledged writes per second of workload.
    public var opsPerSecond: Double
    /// Ops applied on a node other than their author's, and per second of workload.
    public var deliveries: Int
    public var deliveriesPerSecond: Double
    /// Bytes sent on all links (TCP payload, handshakes excluded), and per delivery.
    public var wireBytes: UInt64
    public var wireBytesPerOp: Double
    /// Ops received on all links (pushed or fetched, duplicates included) per op a node holds
    /// and did not write (carried ones included): 1 when every node gets each op once. Absent in
    /// older reports.
    public var copiesPerOp: Double?
    /// `wireBytesPerOp` by message type (`ping`, `newOp`, `vector`, …; the streams' headers left
    /// out): where the bytes go. Absent in older reports.
    public var wireBytesPerOpByType: [String: Double]?

    /// The largest parts of `wireBytesPerOpByType`, largest first ("newOp 612, vector 301, …").
    public var wireBreakdown: String? {
        guard let byType = wireBytesPerOpByType, !byType.isEmpty else { return nil }
        return byType.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.prefix(8)
            .map { "\($0.key) \(Int($0.value.rounded()))" }.joined(separator: ", ")
    }
    public var nodes: [NodeReport]
    public var faults: [FaultReport]
    /// Chains frozen by a fork, summed over the nodes' stores at the end: 0 unless a key signed
    /// two ops at one position (two devices of one person never do). Absent in older reports.
    public var forks: Int?
    /// Partitions whose digests still differed at the end (empty when converged).
    public var divergedPartitions: [String]
    /// The first lost writes, with the nodes that lack them.
    public var lostSample: [LostWrite]
    public var configuration: Configuration
    /// Deliveries per node per second of the run (for the chart).
    public var deliveredPerSecond: [[Int]]
    /// Latency histogram: counts per bucket, bucket upper bounds in milliseconds.
    public var latencyHistogram: Histogram
    /// The last reason a node gave for refusing a write.
    public var lastRefusal: String?
    /// Why the run ended early, if it did (a node that would not start...).
    public var error: String?

    public struct Latency: Codable, Sendable, Equatable {
        public var p50: Double?
        public var p95: Double?
        public var p99: Double?
        public var max: Double?
        public var count: Int
    }

    public struct NodeReport: Codable, Sendable, Equatable {
        public var index: Int
        public var name: String
        public var id: String
        public var peakRssBytes: UInt64
        /// CPU seconds (user and system) its processes used.
        public var cpuSeconds: Double
        public var starts: Int
        public var clockSkewMs: Int64
        public var writesAcknowledged: Int
        public var address: String?
        /// For a paired device (`--devices`): the node whose person it writes for.
        public var deviceOf: Int?
    }

    public struct FaultReport: Codable, Sendable, Equatable {
        public var kind: String
        public var spec: String
        public var node: Int?
        public var startSeconds: Double
        /// nil for faults that last to the end (skew, broken).
        public var endSeconds: Double?
        /// For splits: the groups of node indices.
        public var groups: [[Int]]?
    }

    public struct LostWrite: Codable, Sendable, Equatable {
        public var id: String
        public var partition: String
        public var kind: String
        public var writtenBy: Int
        public var missingOn: [Int]
    }

    public struct Configuration: Codable, Sendable, Equatable {
        public var nodes: Int
        public var durationSeconds: Double
        public var rate: Double
        public var seed: UInt64
        public var rooms: Int
        public var conversations: Int
        public var devices: Int?
        public var netns: Bool
        public var faults: String
        public var settleTimeoutSeconds: Double
        public var command: String
    }

    public struct Histogram: Codable, Sendable, Equatable {
        public var boundsMs: [Double]
        public var counts: [Int]
    }

    /// Whether the lab passes: converged, nothing lost, no fork.
    public var passed: Bool { converged && lostWrites == 0 && (forks ?? 0) == 0 && error == nil }

    /// The latency summary of `millis`.
    public static func latency(_ millis: [Double]) -> Latency {
        let sorted = millis.sorted()
        return Latency(
            p50: Statistics.percentile(50, ofSorted: sorted), p95: Statistics.percentile(95, ofSorted: sorted),
            p99: Statistics.percentile(99, ofSorted: sorted), max: sorted.last, count: sorted.count)
    }

    /// The report as pretty JSON. The contract's optional fields (`convergence_seconds`, the
    /// latency percentiles) are written as null rather than left out, as `JSONEncoder` would,
    /// so a script can read them without checking for the key.
    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard var object = try JSONSerialization.jsonObject(with: try encoder.encode(self)) as? [String: Any] else {
            return try encoder.encode(self)
        }
        if object["convergence_seconds"] == nil { object["convergence_seconds"] = NSNull() }
        if var latency = object["latency_ms"] as? [String: Any] {
            for key in ["p50", "p95", "p99", "max"] where latency[key] == nil { latency[key] = NSNull() }
            object["latency_ms"] = latency
        }
        return try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
    }

    /// Reads a `report.json`.
    public static func decode(_ data: Data) throws -> LabReport {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(LabReport.self, from: data)
    }
}
