import Identity
import Replica
import SQLite
import Sodium
import Wire

/// A partition known to the store, as the parts name `ReplicaStore.PartitionRecord`.
typealias PartitionRecord = ReplicaStore.PartitionRecord

/// The op log and its index: partitions, authors, ops, heads (version vectors), fork proofs,
/// which ops' signatures were checked, and the ops one write stored (docs/DESIGN.md §5).
///
/// Owns the rows of `partitions`, `authors`, `ops`, `heads`, `fork_proofs` and
/// `refused_signatures`, and every cache of them: partition and author row ids (each apply looks
/// them up), the partition list, the signatures this process verified, the refused positions,
/// the ops it erased, and the ops watched since `markOpInserts()`. It applies no rules: the
/// store checks an op (`ReplicaStore.apply`) before it asks the log to keep it. Its caches hold
/// only what the file holds; `forgetCachedRows()` drops them after a rollback or another
/// process's write. Not thread-safe: its store's one owner uses it.
public final class OpLog {
    let database: Database
    /// Opened with `ReplicaStore.init(readOnlyPath:)`: a bad signature is withheld, not repaired.
    let isReadOnly: Bool

    var partitionCache: [PartitionID: PartitionRecord] = [:]
    /// `partitions()` as last read, with the `data_version` it was read at: the sync layer asks
    /// for the list after every write, and decoding every descriptor each time showed up in
    /// profiles. Dropped by every change this connection makes to the table; another
    /// connection's commit moves `data_version`.
    var partitionListCache: (dataVersion: Int64, records: [PartitionRecord])?
    var authorCache: [UserID: Int64] = [:]
    /// Ops whose signatures this process verified (`noteSignatureChecked`).
    var checkedSignatures: Set<SignedOpKey> = []
    /// Ids of ops whose bodies this process erased, up to `maxRememberedErasures` (then started
    /// afresh): an op applied and erased in one write may still be in memory whole, on its way
    /// to the links; `OutboundChecks.sendable` sends the erased form instead.
    var erasedHere: Set<OpID> = []
    /// The `refused_signatures` table's positions (loaded on first use).
    var refusedSignaturesCache: Set<ChainPosition>?
    /// The clock of `received_at`, in Unix microseconds; nil: the `nowMillis` of each apply.
    /// The node sets its wall clock here, to the microsecond.
    public var receivedAtMicros: (() -> UInt64)?
    /// The row id of the first op this connection stored since `markOpInserts()` (nil: none).
    public internal(set) var firstOpRowIDSinceMark: Int64?
    /// The ops this connection stored since `markOpInserts()`, in row order, while they are
    /// watched (nil: not watched, so an apply between writes keeps nothing).
    var opsSinceMark: [Operation]?
    /// False once a rollback may have undone some of `opsSinceMark`, a partition was added
    /// since the mark (which the list alone does not show), or another process committed
    /// between two of the write's transactions.
    var opsSinceMarkAreExact = false
    /// `dataVersion` inside the transaction that stored the first of `opsSinceMark` (no lock
    /// of its own there): whether another process had written before this write.
    var dataVersionAtFirstOpSinceMark: Int64?
    /// The row id of the last of `opsSinceMark`.
    var lastOpRowIDSinceMark: Int64?

    init(database: Database, isReadOnly: Bool) {
        self.database = database
        self.isReadOnly = isReadOnly
    }

    /// Empties the caches of rows and what was read from them (after a rollback, or another
    /// process's write).
    func forgetCachedRows() {
        partitionCache.removeAll()
        partitionListCache = nil
        authorCache.removeAll()
        refusedSignaturesCache = nil
    }

    /// After a rollback (the rows cached are forgotten too, `forgetCachedRows`): ops watched
    /// since a mark may no longer be stored.
    func rolledBack() {
        opsSinceMarkAreExact = false
    }

    /// A change counter that moves when any connection commits (to notice CLI writes).
    public var dataVersion: Int64 { get throws { try database.dataVersion } }

    // MARK: Partitions

    /// Records a partition (idempotent). `joined` marks partitions the user takes part in
    /// (rooms they joined); a partition known only to carry it for others is not joined.
    @discardableResult
    public func ensurePartition(_ descriptor: PartitionDescriptor, joined: Bool) throws -> ReplicaStore.PartitionRecord {
        if var record = try partition(descriptor.id) {
            if joined && !record.joined {
                try database.execute("UPDATE partitions SET joined = 1, joined_at = \(Self.nowMillisSQL) WHERE pid = ?", .integer(record.pid))
                record.joined = true
                partitionCache[record.id] = record
                partitionListCache = nil
            }
            return record
        }
        try database.execute(
            """
            INSERT INTO partitions(id, kind, descriptor, joined, joined_at) VALUES (?, ?, ?, ?, CASE WHEN ?4 THEN \(Self.nowMillisSQL) END)
            ON CONFLICT(id) DO NOTHING
            """,
            .blob(descriptor.id.bytes), .integer(Int64(descriptor.kind.rawValue)),
            .blob(descriptor.encoded), .integer(joined ? 1 : 0))
        if database.changes == 0 {
            // Another connection stored it since the look-up above (a node carrying the room
            // a command joins at that moment): take that record, joined if asked.
            guard try partition(descriptor.id) != nil else { throw StoreError.damaged("partition \(descriptor.id) neither stored nor found") }
            return try ensurePartition(descriptor, joined: joined)
        }
        let record = PartitionRecord(pid: database.lastInsertRowID, descriptor: descriptor, joined: joined)
        partitionCache[record.id] = record
        partitionListCache = nil
        opsSinceMarkAreExact = false
        return record
    }

    /// Marks a partition as left (its ops stay; the node stops showing it).
    public func setJoined(_ id: PartitionID, _ joined: Bool) throws {
        try database.execute(
            "UPDATE partitions SET joined = ?1, joined_at = CASE WHEN ?1 AND NOT joined THEN \(Self.nowMillisSQL) ELSE joined_at END WHERE id = ?2",
            .integer(joined ? 1 : 0), .blob(id.bytes))
        partitionCache[id] = nil
        partitionListCache = nil
    }

    /// The wall clock in Unix milliseconds, as SQL (when a room was joined).
    static let nowMillisSQL = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"

    /// When this node's user joined the partition (Unix ms); nil if not joined, or joined before
    /// the store recorded it.
    public func joinedAt(_ id: PartitionID) throws -> UInt64? {
        try database.scalar("SELECT joined_at FROM partitions WHERE id = ? AND joined = 1", .blob(id.bytes), as: Int64.self).map { UInt64(max(0, $0)) }
    }

    /// The partition with this id, if known.
    public func partition(_ id: PartitionID) throws -> ReplicaStore.PartitionRecord? {
        if let cached = partitionCache[id] { return cached }
        let statement = try database.cachedStatement("SELECT pid, descriptor, joined FROM partitions WHERE id = ?")
        let found = try statement.firstRow(.blob(id.bytes)) { row in
            PartitionRecord(pid: row.int64(0), descriptor: try PartitionDescriptor(decoding: row.blob(1)), joined: row.int(2) != 0)
        }
        if let found { partitionCache[id] = found }
        return found
    }

    /// Every known partition, in a stable order.
    public func partitions() throws -> [ReplicaStore.PartitionRecord] {
        let version = try dataVersion
        if let cached = partitionListCache, cached.dataVersion == version { return cached.records }
        let records = try database.prepare("SELECT pid, descriptor, joined FROM partitions ORDER BY pid").rows { row in
            PartitionRecord(pid: row.int64(0), descriptor: try PartitionDescriptor(decoding: row.blob(1)), joined: row.int(2) != 0)
        }
        partitionListCache = (version, records)
        return records
    }

    func descriptor(pid: Int64) throws -> PartitionDescriptor? {
        if let cached = partitionCache.values.first(where: { $0.pid == pid }) { return cached.descriptor }
        let statement = try database.cachedStatement("SELECT descriptor FROM partitions WHERE pid = ?")
        return try statement.firstRow(.integer(pid)) { try PartitionDescriptor(decoding: $0.blob(0)) }
    }

    // MARK: Authors

    /// The row id for an author key, created on first sight.
    func authorID(_ user: UserID) throws -> Int64 {
        if let aid = authorCache[user] { return aid }
        let find = try database.cachedStatement("SELECT aid FROM authors WHERE key = ?")
        if let aid = try find.firstRow(.blob(user.publicKey), map: { $0.int64(0) }) {
            authorCache[user] = aid
            return aid
        }
        try database.cachedStatement("INSERT INTO authors(key) VALUES (?)").run(.blob(user.publicKey))
        let aid = database.lastInsertRowID
        authorCache[user] = aid
        return aid
    }

    /// The key of an author row, if it exists.
    func authorKey(_ aid: Int64) throws -> UserID? {
        try database.cachedStatement("SELECT key FROM authors WHERE aid = ?").firstRow(.integer(aid)) { UserID(publicKey: $0.blob(0)) } ?? nil
    }

    /// The row id of an author if already known (reads never create rows).
    func existingAuthorID(_ user: UserID) throws -> Int64? {
        if let aid = authorCache[user] { return aid }
        return try database.cachedStatement("SELECT aid FROM authors WHERE key = ?").firstRow(.blob(user.publicKey)) { $0.int64(0) }
    }

    // MARK: Heads

    /// The author's head in a partition (`maxSeq` 0 when none).
    func head(pid: Int64, aid: Int64) throws -> ChainHead {
        let statement = try database.cachedStatement("SELECT max_seq, head_id, frozen_at, unchecked_from FROM heads WHERE pid = ? AND aid = ?")
        return try statement.firstRow(.integer(pid), .integer(aid)) { row in
            ChainHead(
                maxSeq: UInt64(row.int64(0)), headID: row.bytes32(1).map(OpID.init) ?? .zero, frozenAt: row.isNull(2) ? nil : UInt64(row.int64(2)),
                uncheckedFrom: row.isNull(3) ? nil : UInt64(row.int64(3)))
        } ?? .none
    }

    /// The version vector of a partition: one head per author.
    public func heads(_ partition: PartitionID) throws -> [Head] {
        guard let record = try self.partition(partition) else { return [] }
        let statement = try database.cachedStatement(
            """
            SELECT a.key, h.max_seq, h.head_id, h.frozen_at FROM heads h JOIN authors a ON a.aid = h.aid WHERE h.pid = ?
            """)
        return try statement.rows(.integer(record.pid)) { row in
            Head(
                author: UserID(publicKey: row.blob(0))!, maxSeq: UInt64(row.int64(1)), headID: OpID(bytes: row.blob(2)) ?? .zero,
                frozenAt: row.isNull(3) ? nil : UInt64(row.int64(3)))
        }
    }

    /// The digest of a partition's op set (docs/DESIGN.md §3.6).
    public func digest(_ partition: PartitionID) throws -> PartitionDigest {
        PartitionDigest(heads: try heads(partition))
    }

    /// Number of ops held in all partitions, read from the chains' heads: a chain holds exactly
    /// its ops 1…`max_seq` (an op is stored only right above its author's head, and `truncate`,
    /// the one removal, cuts a chain from a seq to its end and lowers the head to what stays),
    /// so the heads' sum is the count. `count(*)` read the whole chain index instead: 80 ms of
    /// `parley status` on the node's loop with 1,000,000 ops, start-up included.
    public func opCount() throws -> Int {
        try database.cachedStatement("SELECT coalesce(sum(max_seq), 0) FROM heads").rows { $0.int(0) }.first ?? 0
    }

    /// Number of ops held for a partition (from its heads, as `opCount()`).
    public func opCount(_ partition: PartitionID) throws -> Int {
        guard let record = try self.partition(partition) else { return 0 }
        return try database.scalar("SELECT coalesce(sum(max_seq), 0) FROM heads WHERE pid = ?", .integer(record.pid)) ?? 0
    }

    /// The ops' rows, counted one by one: what `opCount()` must equal (tests check it).
    func countedOpRows() throws -> Int {
        try database.scalar("SELECT count(*) FROM ops") ?? 0
    }

    // MARK: Storing ops

    func insert(_ op: Operation, pid: Int64, aid: Int64, signatureChecked: Bool, nowMillis: UInt64) throws -> Int64 {
        try database.cachedStatement(
            """
            INSERT INTO ops(pid, aid, seq, type, hlc, header, body, received_at, signature_checked, erasure) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """
        ).run(
            .integer(pid), .integer(aid), .integer(Int64(op.seq)),
            .integer(Int64(op.type)), .integer(Int64(bitPattern: op.hlc.raw)), .blob(op.header), .blob(op.body),
            .integer(Int64(clamping: receivedAtMicros?() ?? nowMillis &* 1_000)), .integer(signatureChecked ? 1 : 0),
            op.isExpired ? .blob([]) : op.erasure.map { .blob($0.proof.header + $0.proof.body) } ?? .null)
        if signatureChecked { noteSignatureChecked(op) }
        let oid = database.lastInsertRowID
        if firstOpRowIDSinceMark == nil { firstOpRowIDSinceMark = oid }
        if opsSinceMark != nil { try watch(op, oid: oid) }
        return oid
    }

    /// Keeps `op`, just stored at row `oid`, for `takeOpsSinceMark()`, with the `data_version`
    /// its transaction sees. A write whose transactions see different values had another
    /// process commit between them, whose rows lie among the write's: the list then cannot
    /// stand for every row up to its last.
    private func watch(_ op: Operation, oid: Int64) throws {
        let version = try dataVersion
        if let first = dataVersionAtFirstOpSinceMark {
            if version != first { opsSinceMarkAreExact = false }
        } else {
            dataVersionAtFirstOpSinceMark = version
        }
        opsSinceMark?.append(op)
        lastOpRowIDSinceMark = oid
    }

    /// Makes `op` the author's head in the partition, with the start of its link-authenticated
    /// tail (nil: none).
    func writeHead(of op: Operation, pid: Int64, aid: Int64, uncheckedFrom: UInt64?) throws {
        try database.cachedStatement(
            """
            INSERT INTO heads(pid, aid, max_seq, head_id, unchecked_from) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT(pid, aid) DO UPDATE SET max_seq = excluded.max_seq, head_id = excluded.head_id, unchecked_from = excluded.unchecked_from
            """
        ).run(.integer(pid), .integer(aid), .integer(Int64(op.seq)), .blob(op.id.bytes), uncheckedFrom.map { .integer(Int64($0)) } ?? .null)
    }

    // MARK: Looking up stored ops

    struct StoredOp {
        let oid: Int64
        let header: [UInt8]
        let body: [UInt8]
        let author: UserID
        let type: UInt8
        /// Whether the op's own signature was verified (else it is held on another op's word).
        let signatureChecked: Bool
        /// The proof (`header ‖ body` of the author's delete) when the body was erased.
        let erasure: [UInt8]?
        var id: OpID { Operation.id(ofHeader: header) }
        func operation() throws -> Operation { try OpLog.storedOperation(header: header, body: body, erasure: erasure) }
    }

    func storedOp(pid: Int64, aid: Int64, seq: UInt64) throws -> StoredOp? {
        let statement = try database.cachedStatement(
            "SELECT oid, header, body, type, signature_checked, erasure FROM ops WHERE pid = ? AND aid = ? AND seq = ?")
        return try statement.firstRow(.integer(pid), .integer(aid), .integer(Int64(seq))) { row in
            let header = row.blob(1)
            return StoredOp(
                oid: row.int64(0), header: header, body: row.blob(2), author: Operation.author(ofHeader: header)!, type: UInt8(row.int(3)),
                signatureChecked: row.int(4) != 0, erasure: row.isNull(5) ? nil : row.blob(5))
        }
    }

    /// Whether this exact op is stored (same position and id).
    public func contains(_ op: Operation) throws -> Bool {
        guard let record = try partition(op.partition), let aid = try existingAuthorID(op.author) else { return false }
        return try storedOp(pid: record.pid, aid: aid, seq: op.seq)?.id == op.id
    }

    /// One author's ops in a partition from `fromSeq`, at most `limit` (sync, export).
    public func ops(in partition: PartitionID, author: UserID, fromSeq: UInt64, limit: Int) throws -> [Operation] {
        guard let record = try self.partition(partition), let aid = try existingAuthorID(author) else { return [] }
        let statement = try database.cachedStatement("SELECT header, body, erasure FROM ops WHERE pid = ? AND aid = ? AND seq >= ? ORDER BY seq LIMIT ?")
        return try statement.rows(.integer(record.pid), .integer(aid), .integer(Int64(fromSeq)), .integer(Int64(limit))) { row in
            try Self.storedOperation(row, from: 0)
        }
    }

    /// Every op of a partition in an order that respects each author's chain (export, rebuild).
    public func allOps(in partition: PartitionID) throws -> [Operation] {
        guard let record = try self.partition(partition) else { return [] }
        return try database.prepare("SELECT header, body, erasure FROM ops WHERE pid = ? ORDER BY aid, seq").rows(.integer(record.pid)) { row in
            try Self.storedOperation(row, from: 0)
        }
    }

    /// Whether the author's op `seq` in the partition, below `before`, is the post `target`.
    func isOwnPost(_ target: OpID, seq: UInt64, before: UInt64, author: UserID, pid: Int64) throws -> Bool {
        guard seq < before, let aid = try existingAuthorID(author), let found = try storedOp(pid: pid, aid: aid, seq: seq) else { return false }
        return found.type == OperationType.post.rawValue && found.id == target
    }

    // MARK: Forks

    /// Fork proofs held for a partition.
    public func forkProofs(_ partition: PartitionID) throws -> [ForkProof] {
        guard let record = try self.partition(partition) else { return [] }
        return try database.prepare("SELECT proof FROM fork_proofs WHERE pid = ? ORDER BY seq").rows(.integer(record.pid)) {
            try ForkProof(encoded: $0.blob(0))
        }
    }

    /// Keeps `proof` (one per author and seq; `Forks.recordFork` truncates the chain after it).
    func insertForkProof(_ proof: ForkProof, pid: Int64, aid: Int64) throws {
        try database.cachedStatement("INSERT OR REPLACE INTO fork_proofs(pid, aid, seq, proof) VALUES (?, ?, ?, ?)")
            .run(.integer(pid), .integer(aid), .integer(Int64(proof.seq)), .blob(proof.encoded))
    }

    /// Removes the author's ops from `seq` on; the head becomes the newest op kept (frozen at
    /// `seq` with `frozen`: a fork point), or goes when none is kept and the chain is not frozen.
    func truncate(pid: Int64, aid: Int64, from seq: UInt64, frozen: Bool) throws {
        // What stays is the chain below `seq`, up to its head: a fork proof may name a seq above
        // the ops this replica holds (it travels by gossip ahead of them), and those ops stay.
        let keep = min(seq - 1, try head(pid: pid, aid: aid).maxSeq)
        try database.execute("DELETE FROM ops WHERE pid = ? AND aid = ? AND seq >= ?", .integer(pid), .integer(aid), .integer(Int64(seq)))
        let below = keep > 0 ? try storedOp(pid: pid, aid: aid, seq: keep) : nil
        if below == nil && !frozen {
            try database.execute("DELETE FROM heads WHERE pid = ? AND aid = ?", .integer(pid), .integer(aid))
            return
        }
        try database.execute(
            """
            INSERT INTO heads(pid, aid, max_seq, head_id, frozen_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT(pid, aid) DO UPDATE SET max_seq = excluded.max_seq, head_id = excluded.head_id, frozen_at = excluded.frozen_at
            """, .integer(pid), .integer(aid), .integer(Int64(below == nil ? 0 : keep)), .blob((below?.id ?? .zero).bytes),
            frozen ? .integer(Int64(seq)) : .null)
    }
}
