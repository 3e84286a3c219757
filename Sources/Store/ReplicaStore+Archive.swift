import Identity
import Replica

/// Export and import of signed ops (`parley export` / `parley import`).
extension ReplicaStore {
    /// What an import did.
    public struct ImportSummary: Equatable, Sendable {
        public var partitions = 0
        public var applied = 0
        public var alreadyPresent = 0
        /// Ops refused (bad signature, broken rule, forked author...) or still missing earlier ops.
        public var refused = 0
        /// `refused` by reason (`RejectReason.category`, or "earlier ops missing").
        public var refusedBy: [String: Int] = [:]
        public var forkProofs = 0
        /// Set when the file could not be read to the end; what came before was imported.
        public var problem: OpArchive.ArchiveError?
        public init() {}

        mutating func refuse(_ reason: String, count: Int = 1) {
            refused += count
            refusedBy[reason, default: 0] += count
        }

        /// `1 bad signature, 2 broken chain`: the reasons, the most common first.
        public var refusalsText: String {
            refusedBy.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        }
    }

    /// Why an op of an import still waits for others: it is refused with this reason if they
    /// never come.
    static let missingEarlierOps = "earlier ops missing"

    /// Writes the given partitions (all known ones when nil): each descriptor, then its ops in
    /// chain order per author, then its fork proofs. Returns the number of ops written.
    @discardableResult
    public func export(_ partitions: [PartitionID]? = nil, to writer: OpArchive.Writer) throws -> Int {
        let records = try self.partitions().filter { partitions?.contains($0.id) ?? true }
        var count = 0
        for record in records {
            try writer.write(.partition(record.descriptor))
            for op in try allOps(in: record.id) {
                try writer.write(.operation(op))
                count += 1
            }
            for proof in try forkProofs(record.id) { try writer.write(.forkProof(proof)) }
        }
        try writer.finish()
        return count
    }

    /// Applies everything in an archive, verifying each op as if it came from a peer. Ops that
    /// wait for others (a gap, a membership not yet known) are retried until nothing changes.
    /// Rooms, the directory and `me`'s own partitions (self, inbox) are joined; conversations
    /// and others' inboxes are carried until `processInbox` finds an invite to them.
    public func importArchive(_ reader: OpArchive.Reader, me: UserID, nowMillis: UInt64) throws -> ImportSummary {
        var summary = ImportSummary()
        var waiting: [(op: Operation, reason: String)] = []
        var batch: [Operation] = []
        func flush() throws {
            guard !batch.isEmpty else { return }
            for (op, outcome) in zip(batch, try apply(batch, nowMillis: nowMillis)) {
                switch outcome {
                case .applied: summary.applied += 1
                case .duplicate: summary.alreadyPresent += 1
                case .forkDetected: summary.forkProofs += 1
                case .pending: waiting.append((op, Self.missingEarlierOps))
                case .rejected(.rule(let violation)) where violation.mayResolveLater: waiting.append((op, RejectReason.rule(violation).category))
                case .rejected(let reason): summary.refuse(reason.category)
                }
            }
            batch.removeAll(keepingCapacity: true)
        }
        while true {
            let next: OpArchive.Record?
            do {
                next = try reader.next()
            } catch let error as OpArchive.ArchiveError {
                summary.problem = error
                break
            }
            guard let record = next else { break }
            switch record {
            case .partition(let descriptor):
                try flush()
                let joined: Bool
                switch descriptor {
                case .room, .directory: joined = true
                case .ownData(let owner), .inbox(let owner): joined = owner == me
                case .conversation: joined = false
                }
                try ensurePartition(descriptor, joined: joined)
                summary.partitions += 1
            case .operation(let op):
                batch.append(op)
                if batch.count >= 256 { try flush() }
            case .forkProof(let proof):
                try flush()
                if try apply(proof) { summary.forkProofs += 1 }
            }
        }
        try flush()
        // Retry what waited on other ops, until a pass makes no progress.
        while !waiting.isEmpty {
            let before = summary.applied
            batch = waiting.map(\.op).sorted { ($0.partition, $0.author, $0.seq) < ($1.partition, $1.author, $1.seq) }
            waiting = []
            try flush()
            if summary.applied == before { break }
        }
        for (_, reason) in waiting { summary.refuse(reason) }
        return summary
    }
}
