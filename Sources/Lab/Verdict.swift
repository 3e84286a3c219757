/// One write the lab asked a node for and the node acknowledged (`author` answered ok): it MUST
/// end up on every node that holds its partition.
public struct AcknowledgedWrite: Sendable, Equatable {
    public var partition: String
    public var author: String
    public var seq: UInt64
    public var id: String
    /// The node that wrote it.
    public var node: Int
    public var kind: String
    /// When the lab sent the request (Unix milliseconds, the host's real clock).
    public var sentAtMillis: UInt64

    public init(partition: String, author: String, seq: UInt64, id: String, node: Int, kind: String, sentAtMillis: UInt64) {
        (self.partition, self.author, self.seq, self.id, self.node) = (partition, author, seq, id, node)
        (self.kind, self.sentAtMillis) = (kind, sentAtMillis)
    }
}

/// What the stores held at the end, per node: for each write, when the node applied it (real
/// Unix milliseconds, the node's clock skew taken out), or nil if it does not hold it.
public typealias AppliedLookup = @Sendable (_ node: Int, _ write: AcknowledgedWrite) -> UInt64?

/// The loss and latency part of the verdict (pure: the stores are read before).
public struct DeliveryVerdict: Sendable, Equatable {
    /// Writes missing on at least one node that should hold them, with those nodes.
    public var lost: [(write: AcknowledgedWrite, missingOn: [Int])]
    /// Milliseconds from the request to the apply on each other holder that held the partition
    /// when the write was made (a member added later gets it as history).
    public var latenciesMillis: [Double]
    /// Deliveries per node per second since `startMillis` (ops applied that another node wrote).
    public var deliveredPerSecond: [[Int]]
    public var deliveries: Int

    public static func == (a: DeliveryVerdict, b: DeliveryVerdict) -> Bool {
        a.lost.map(\.write) == b.lost.map(\.write) && a.lost.map(\.missingOn) == b.lost.map(\.missingOn)
            && a.latenciesMillis == b.latenciesMillis && a.deliveredPerSecond == b.deliveredPerSecond && a.deliveries == b.deliveries
    }

    /// Checks every acknowledged write on every node in `holders(partition)`.
    public static func evaluate(
        writes: [AcknowledgedWrite], nodes: Int, startMillis: UInt64, seconds: Int, holders: (String) -> Set<Int>,
        holderSince: (Int, String) -> UInt64 = { _, _ in 0 }, applied: AppliedLookup
    ) -> DeliveryVerdict {
        var verdict = DeliveryVerdict(
            lost: [], latenciesMillis: [], deliveredPerSecond: Array(repeating: Array(repeating: 0, count: max(1, seconds)), count: nodes),
            deliveries: 0)
        for write in writes {
            var missing: [Int] = []
            for node in holders(write.partition).sorted() {
                guard let at = applied(node, write) else {
                    missing.append(node)
                    continue
                }
                guard node != write.node else { continue }
                verdict.deliveries += 1
                if holderSince(node, write.partition) <= write.sentAtMillis {
                    verdict.latenciesMillis.append(Double(at) - Double(write.sentAtMillis))
                }
                let second = at >= startMillis ? Int((at - startMillis) / 1_000) : 0
                if second < verdict.deliveredPerSecond[node].count { verdict.deliveredPerSecond[node][second] += 1 }
            }
            if !missing.isEmpty { verdict.lost.append((write, missing)) }
        }
        return verdict
    }
}
