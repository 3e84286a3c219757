import Replica
import SQLite
import Sodium

/// Salvage (`parley salvage`): every op still readable from a damaged store file, verified,
/// into an export file that `parley import` takes into a fresh store.
///
/// A query that meets a damaged page fails whole, so `history`, `export` and a node's sync stop
/// at the first one; here the tables are read row by row (`Database.salvageRows`) and only the
/// rows on damaged pages are lost. The file is opened read-only and never written; nothing but
/// the op log, the partitions' descriptors and the fork proofs is read (the views are rebuilt
/// from the ops by the import, and the secrets a store keeps — conversations' epoch keys — are
/// opened again from the key grants in the log with the identity's key). It needs no store: it
/// reads the file through a `Database` of its own.
public enum Salvage {
    /// What `salvage` read, wrote and had to leave behind.
    public struct Report: Equatable, Sendable {
        /// Partitions written (their descriptors read whole).
        public var partitions = 0
        /// Ops written: each read whole, linked to the one before it in its chain, with its body
        /// hash and its own signature checked (an export file carries only ops whose signatures
        /// this node verified, as every op that leaves a node).
        public var ops = 0
        /// Of `ops`, those after a lost op in their author's chain. An import stores an op only
        /// after every earlier op of its chain, so these wait for a peer to send the lost ones
        /// (importing the file again after that sync takes them).
        public var opsAfterGap = 0
        public var forkProofs = 0
        /// Op rows that were listed but could not be read, or did not hold a valid op (damage
        /// inside a page that SQLite's checks let through).
        public var unreadableOps = 0
        public var invalidOps = 0
        /// Ops of partitions whose descriptor could not be read (without it an import cannot
        /// check them against the partition's rules).
        public var opsWithoutPartition = 0
        /// Runs of rowids of the op log on damaged pages, and of the partitions table.
        public var unreadableOpRanges: [ClosedRange<Int64>] = []
        public var unreadablePartitionRanges: [ClosedRange<Int64>] = []
        /// False when a scan gave up before the end of a table (`Database.maxSalvageProbes`).
        public var complete = true

        public init() {}
    }

    /// Ops of one chain verified together at most (their signatures on every core).
    static let runLength = 256

    /// Reads every op still readable from the store file at `path` (opened read-only) and
    /// writes them to `writer`: each partition's descriptor, its ops in chain order per author,
    /// its fork proofs, then the checksum trailer. Throws only when the file cannot be opened
    /// at all (the header or schema is damaged) or `writer` fails.
    /// `key`: the store key of an encrypted store (pages that fail its check read as damaged).
    public static func salvage(databaseAt path: String, key: SecureBytes? = nil, to writer: OpArchive.Writer) throws -> Report {
        let database = try Database(path: path, mode: .readOnly, cipherKey: key?.bytes)
        defer { database.close() }
        var report = Report()

        var descriptors: [(pid: Int64, descriptor: PartitionDescriptor)] = []
        let partitionScan = try database.salvageRows(of: "partitions", columns: ["descriptor"]) { pid, row in
            if let descriptor = try? PartitionDescriptor(decoding: row.blob(1)) { descriptors.append((pid, descriptor)) }
        }
        report.unreadablePartitionRanges = partitionScan.unreadable

        // Where each readable op row sits in its chain (32 bytes a row); the ops are read one by
        // one later, in chain order.
        struct Position { let pid: Int64, aid: Int64, seq: Int64, oid: Int64 }
        var positions: [Int64: [Position]] = [:]
        let opScan = try database.salvageRows(of: "ops", columns: ["pid", "aid", "seq"]) { oid, row in
            positions[row.int64(1), default: []].append(Position(pid: row.int64(1), aid: row.int64(2), seq: row.int64(3), oid: oid))
        }
        report.unreadableOpRanges = opScan.unreadable

        var proofs: [Int64: [ForkProof]] = [:]
        let proofScan = try database.salvageRows(of: "fork_proofs", columns: ["pid", "proof"]) { _, row in
            if let proof = try? ForkProof(encoded: row.blob(2)) { proofs[row.int64(1), default: []].append(proof) }
        }
        report.complete = partitionScan.complete && opScan.complete && proofScan.complete

        let known = Set(descriptors.map(\.pid))
        report.opsWithoutPartition = positions.filter { !known.contains($0.key) }.reduce(0) { $0 + $1.value.count }
        let read = try database.prepare("SELECT header, body FROM ops WHERE oid = ?")
        for (pid, descriptor) in descriptors {
            try writer.write(.partition(descriptor))
            report.partitions += 1
            var salvager = ChainSalvager(writer: writer)
            for position in (positions[pid] ?? []).sorted(by: { ($0.aid, $0.seq, $0.oid) < ($1.aid, $1.seq, $1.oid) }) {
                let op: Operation?
                do {
                    op = try read.firstRow(.integer(position.oid)) { try? Operation(header: $0.blob(0), body: $0.blob(1)) } ?? nil
                } catch let error as SQLiteError where error.code != SQLiteError.busy {
                    report.unreadableOps += 1
                    continue
                }
                guard let op, op.partition == descriptor.id else {
                    report.invalidOps += 1
                    continue
                }
                try salvager.add(op, report: &report)
            }
            try salvager.flush(report: &report)
            for proof in proofs[pid] ?? [] {
                try writer.write(.forkProof(proof))
                report.forkProofs += 1
            }
        }
        try writer.finish()
        return report
    }
}

/// The ops of one partition in chain order (author by author), verified a run at a time and
/// written.
private struct ChainSalvager {
    let writer: OpArchive.Writer
    /// Ops read and not yet verified: one author's, each linked to the one before.
    private var run: [Operation] = []
    /// The last op of the current author read before `run`.
    private var last: Operation?
    /// Whether the current author's chain lost an op before `run`.
    private var broken = false

    init(writer: OpArchive.Writer) { self.writer = writer }

    mutating func add(_ op: Operation, report: inout Salvage.Report) throws {
        var previous = run.last ?? last
        if let other = previous, other.author != op.author {
            try flush(report: &report)
            (last, previous, broken) = (nil, nil, false)
        }
        if let previous, op.seq == previous.seq {
            report.invalidOps += 1  // a second op at one position: the store never keeps two
            return
        }
        let follows = previous.map { op.seq == $0.seq + 1 && op.prev == $0.id } ?? (op.seq == 1)
        if !follows || run.count >= Salvage.runLength {
            try flush(report: &report)
            if !follows { broken = true }
        }
        run.append(op)
    }

    /// Verifies each op of the run (its `prev` links were checked as it was added) and writes
    /// the ops that hold.
    mutating func flush(report: inout Salvage.Report) throws {
        guard !run.isEmpty else { return }
        defer { run.removeAll(keepingCapacity: true) }
        for (op, signed) in zip(run, Operation.signaturesAreValid(run)) {
            guard signed, op.hasValidBodyHash else {
                report.invalidOps += 1
                broken = true
                continue
            }
            try writer.write(.operation(op))
            report.ops += 1
            if broken { report.opsAfterGap += 1 }
        }
        last = run.last
    }
}
