import Identity
import Replica
import Sodium
import Wire

/// Export and import of signed ops (`parley export` / `parley import`): between a store and an
/// op file (`OpArchive`). Exports what may leave the node (`OutboundChecks.sendable`); imports
/// through the store's apply, each op's own signature verified first. Holds nothing of its own:
/// made for a call over the store it is given, and used by that store's one owner.
public struct OpArchiver {
    let store: ReplicaStore

    public init(_ store: ReplicaStore) { self.store = store }

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
        /// Blobs (attachments, avatars) kept: each one's hash is named by a view here.
        public var blobs = 0
        /// Blobs left out: no message or profile here names their hash (a conversation this node
        /// only carries, or content that matches nothing in the file's ops).
        public var blobsUnnamed = 0
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

    /// What an export wrote.
    public struct ExportSummary: Equatable, Sendable {
        public var ops = 0
        /// Ops not written because an op of their chain at or below them has a signature that
        /// does not verify (`OutboundChecks.sendable`: a writable store removes them, to be fetched again).
        public var withheld = 0
        /// Blobs written, and their bytes.
        public var blobs = 0
        public var blobBytes = 0

        public init(ops: Int = 0, withheld: Int = 0, blobs: Int = 0, blobBytes: Int = 0) {
            (self.ops, self.withheld, self.blobs, self.blobBytes) = (ops, withheld, blobs, blobBytes)
        }
    }

    /// Why an op of an import still waits for others: it is refused with this reason if they
    /// never come.
    public static let missingEarlierOps = "earlier ops missing"

    /// Writes the given partitions (all known ones when nil): each descriptor, then its ops in
    /// chain order per author, then its fork proofs, then (with `blobs`) the blobs its views name
    /// that this store holds. Like every op that leaves the node, each has a signature this store
    /// verified (`OutboundChecks.sendable`).
    @discardableResult
    public func export(
        _ partitions: [PartitionID]? = nil, to writer: OpArchive.Writer, blobs: Bool = true, nowMillis: UInt64
    ) throws -> ExportSummary {
        let records = try store.log.partitions().filter { partitions?.contains($0.id) ?? true }
        var summary = ExportSummary()
        for record in records {
            try writer.write(.partition(record.descriptor))
            let ops = try store.log.allOps(in: record.id)
            var start = 0
            while start < ops.count {
                var end = start + 1
                while end < ops.count, ops[end].author == ops[start].author, end - start < Self.exportCheckChunk { end += 1 }
                let sendable = try store.outbound.sendable(Array(ops[start..<end]), nowMillis: nowMillis).ops
                for op in sendable { try writer.write(.operation(op)) }
                summary.ops += sendable.count
                guard sendable.count < end - start else {
                    start = end
                    continue
                }
                // The rest of this author's chain cannot be written without the op it lost.
                let author = ops[start].author
                var next = start + sendable.count
                while next < ops.count, ops[next].author == author { next += 1 }
                summary.withheld += next - (start + sendable.count)
                start = next
            }
            for proof in try store.log.forkProofs(record.id) { try writer.write(.forkProof(proof)) }
            guard blobs else { continue }
            for hash in try store.blobs.heldBlobs(namedIn: record.id) {
                guard let data = try store.blobs.blob(hash) else { continue }
                try writer.write(.blob(data))
                summary.blobs += 1
                summary.blobBytes += data.count
            }
        }
        try writer.finish()
        return summary
    }

    /// Ops of one chain whose signatures an export checks together (`OutboundChecks.sendable`).
    static let exportCheckChunk = 4_096

    /// Applies `ops` with every op's own signature verified first (on every core), not a run's
    /// last alone: a file carries no link that could be blamed, so an op with a bad signature is
    /// refused here, by name, and never stored on its chain's word.
    func applyVerifyingEach(_ ops: [Operation], nowMillis: UInt64) throws -> [ApplyOutcome] {
        let valid = Operation.signaturesAreValid(ops)
        let good = zip(ops, valid).filter(\.1).map(\.0)
        var outcomes = try store.apply(good, nowMillis: nowMillis, signaturesChecked: true).makeIterator()
        return valid.map { $0 ? outcomes.next()! : .rejected(.invalid(.badSignature)) }
    }

    /// Applies everything in an archive, verifying each op's signature. Ops that
    /// wait for others (a gap, a membership not yet known) are retried until nothing changes.
    /// Rooms, the directory and `me`'s own partitions (self, inbox) are joined; conversations
    /// and others' inboxes are carried until `ReplicaStore.processInbox` finds an invite to them.
    public func importArchive(_ reader: OpArchive.Reader, me: UserID, nowMillis: UInt64) throws -> ImportSummary {
        var summary = ImportSummary()
        var waiting: [(op: Operation, reason: String)] = []
        var batch: [Operation] = []
        // The partition whose records are being read: a blob belongs to it.
        var current: PartitionID?
        func flush() throws {
            guard !batch.isEmpty else { return }
            for (op, outcome) in zip(batch, try applyVerifyingEach(batch, nowMillis: nowMillis)) {
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
                // A private room is joined with its passphrase (`join --room-passphrase-file`),
                // which no export file holds: imported, it is carried until then.
                case .conversation, .privateRoom: joined = false
                }
                try store.log.ensurePartition(descriptor, joined: joined)
                summary.partitions += 1
                current = descriptor.id
            case .operation(let op):
                batch.append(op)
                if batch.count >= 256 { try flush() }
            case .forkProof(let proof):
                try flush()
                if try store.forks.apply(proof) { summary.forkProofs += 1 }
            case .blob(let data):
                // Kept only under the hash of its bytes, and only if the partition's views name
                // that hash, as a blob from a peer (`Blobs.isBlobNamed`).
                try flush()
                let hash = Bytes32(GenericHash.hash(data))!
                if let current, data.count <= Blobs.maxBlobBytes + EncryptedBody.overheadBytes,
                    try store.blobs.isBlobNamed(hash, in: current)
                {
                    try store.blobs.storeBlob(data, nowMillis: nowMillis)
                    summary.blobs += 1
                } else {
                    summary.blobsUnnamed += 1
                }
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
