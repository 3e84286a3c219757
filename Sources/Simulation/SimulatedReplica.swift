import Identity
import Replica

/// One simulated node's op log, in memory: what `OpLog` and `ReplicaStore.apply` do for the
/// sync protocol, without the views. Each partition holds its authors' hash chains; an op is
/// applied by the log's envelope and chain rules — its body matches its hash, its signature
/// verifies, it links to the author's head, its seq is next — so a simulated node stores no op
/// that does not verify, like a real one (docs/DESIGN.md §3.3).
struct SimulatedReplica {
    /// Each partition's chains, by author: `chain[i].seq == i + 1`.
    private(set) var partitions: [PartitionID: [UserID: [Operation]]] = [:]
    /// Digests computed since the partition last changed.
    private var digests: [PartitionID: PartitionDigest] = [:]

    mutating func hold(_ id: PartitionID) {
        if partitions[id] == nil { partitions[id] = [:] }
    }

    /// The partition's heads (`OpLog.heads`).
    func heads(_ id: PartitionID) -> [Head] {
        (partitions[id] ?? [:]).compactMap { author, chain in
            chain.last.map { Head(author: author, maxSeq: $0.seq, headID: $0.id) }
        }.sorted { $0.author < $1.author }
    }

    /// At most `limit` of one author's ops from `fromSeq` on (`OpLog.ops(in:author:fromSeq:limit:)`).
    func ops(in id: PartitionID, author: UserID, fromSeq: UInt64, limit: Int) -> [Operation] {
        guard let chain = partitions[id]?[author], fromSeq >= 1, fromSeq <= UInt64(chain.count) else { return [] }
        let start = Int(fromSeq - 1)
        return Array(chain[start..<min(chain.count, start + max(0, limit))])
    }

    /// The ops held in `id`.
    func count(_ id: PartitionID) -> Int {
        partitions[id]?.values.reduce(0) { $0 + $1.count } ?? 0
    }

    mutating func digest(_ id: PartitionID) -> PartitionDigest {
        if let digest = digests[id] { return digest }
        let digest = PartitionDigest(heads: heads(id))
        digests[id] = digest
        return digest
    }

    /// The author's next seq and the id it links to, for a local write.
    func next(in id: PartitionID, author: UserID) -> (seq: UInt64, prev: OpID) {
        let chain = partitions[id]?[author] ?? []
        return (UInt64(chain.count) + 1, chain.last?.id ?? .zero)
    }

    /// Applies one author's ops in one partition, in chain order (`ReplicaStore.apply`).
    /// `verified` holds every op whose hash and signature were checked once already, so each is
    /// checked once per simulation, not once per node: an op equal to a verified one (header,
    /// signature and body) verifies the same.
    mutating func apply(_ ops: [Operation], verified: inout Set<Operation>) -> [ApplyOutcome] {
        ops.map { apply($0, verified: &verified) }
    }

    private mutating func apply(_ op: Operation, verified: inout Set<Operation>) -> ApplyOutcome {
        guard partitions[op.partition] != nil else { return .rejected(.unknownPartition) }
        let chain = partitions[op.partition]![op.author] ?? []
        guard op.seq >= 1 else { return .rejected(.invalid(.malformed("seq 0"))) }
        if op.seq <= UInt64(chain.count) {
            // A second op at a held seq is a fork; honest simulated authors never sign one.
            return chain[Int(op.seq - 1)].id == op.id ? .duplicate : .rejected(.invalid(.brokenChain))
        }
        guard op.seq == UInt64(chain.count) + 1 else { return .pending(missingFrom: UInt64(chain.count) + 1) }
        guard op.prev == (chain.last?.id ?? .zero) else { return .rejected(.invalid(.brokenChain)) }
        if !verified.contains(op) {
            guard op.hasValidBodyHash else { return .rejected(.invalid(.bodyHashMismatch)) }
            guard op.hasValidSignature else { return .rejected(.invalid(.badSignature)) }
            verified.insert(op)
        }
        append(op)
        return .applied
    }

    /// Stores an op already checked (a local write, or `apply`'s).
    mutating func append(_ op: Operation) {
        partitions[op.partition]![op.author, default: []].append(op)
        digests[op.partition] = nil
    }
}
