import Identity
import Replica
import SQLite
import Sodium
import Wire

/// A node's replicas of all its partitions, in one SQLite file: the op log, the heads (version
/// vectors), fork proofs and the materialized views (docs/DESIGN.md §5).
///
/// Not thread-safe: one owner (an actor, or a command-line process) per instance, and one
/// instance per file per process. Another process may open the same file (WAL); it notices new
/// ops through `dataVersion`.
public final class ReplicaStore {
    public let database: Database
    /// The hybrid logical clock for ops this store authors; persisted with each local op.
    public internal(set) var clock: HybridClock

    /// How many bytes of ops this node keeps for each partition it only carries for others (a
    /// conversation none of its identities belongs to, someone else's inbox). Over it, such ops
    /// are refused with `.rule(.quotaExceeded)` — the carrier stops carrying; members never
    /// apply a quota, so they all keep the same op set.
    public var carrierQuotaBytes: Int = 64 << 20

    var partitionCache: [PartitionID: PartitionRecord] = [:]
    /// `partitions()` as last read, with the `data_version` it was read at: the sync layer asks
    /// for the list after every write, and decoding every descriptor each time showed up in
    /// profiles. Dropped by every change this connection makes to the table; another
    /// connection's commit moves `data_version`.
    var partitionListCache: (dataVersion: Int64, records: [PartitionRecord])?
    var authorCache: [UserID: Int64] = [:]
    /// The identities whose secret keys this store may use to open grants and invites.
    var localIdentities: [UserID: LocalIdentity] = [:]
    /// Epoch keys opened so far, by partition row id (loaded from `epoch_keys` on first use).
    var epochKeyCache: [Int64: [EpochKey]] = [:]
    /// Partitions whose views must be rebuilt before the transaction ends: a key arrived that
    /// opens ops already stored.
    var pendingRebuilds: Set<Int64> = []
    /// Bytes held per carried partition (loaded on first use, then kept up to date).
    var carriedBytes: [Int64: Int] = [:]
    /// Conversations' resolved membership, by partition row id (dropped whenever it is resolved again).
    var membershipCache: [Int64: Membership.State] = [:]
    /// Ops whose signatures this process verified (`noteSignatureChecked`).
    var checkedSignatures: Set<SignedOpKey> = []
    /// Ids of ops whose bodies this process erased, up to `maxRememberedErasures` (then started
    /// afresh): an op applied and erased in one write may still be in memory whole, on its way
    /// to the links; `sendable` sends the erased form instead.
    var erasedHere: Set<OpID> = []
    /// The `refused_signatures` table's positions (loaded on first use).
    var refusedSignaturesCache: Set<ChainPosition>?
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
    /// Opened with `init(readOnlyPath:)`: keys opened from grants stay in memory only.
    let isReadOnly: Bool

    /// Opens (creating if needed) the store at `path` and brings its schema up to date.
    /// `":memory:"` gives a private in-memory store (tests). `vfs`: the SQLite VFS to open the
    /// file through, by its registered name (tests put a file layer that cuts the power there);
    /// nil is the default.
    public init(path: String, vfs: String? = nil) throws {
        database = try Database(path: path, vfs: vfs)
        isReadOnly = false
        // Checkpoint on a thread of its own (in the commit, its 75–100 ms stalled every apply
        // behind it) every 3,072–5,120 frames of WAL (3–5 MiB with `Database.newFilePageSize`,
        // 12–20 MiB in a store made with 4 KiB pages; drawn anew each time: nodes on one host that hold
        // the same ops would otherwise checkpoint together); what stays in the commit is the last
        // few frames' copy that lets the WAL restart, a few milliseconds. 64 MiB measured worse.
        try database.checkpointInBackground(pages: 4_096, jitter: 0.5, backstopPages: 32_768)
        try database.migrate(Schema.migrations)
        clock = HybridClock(last: try Self.clockSetting(database))
        try forgetCachedRowsOnRollback()
        try fillAttachmentHashesIfNeeded()
        try eraseDeletedBodiesIfNeeded()
        try ensurePartition(.directory, joined: true)
    }

    /// Opens an existing store read-only (commands that only read, while a node may be writing).
    public init(readOnlyPath path: String) throws {
        database = try Database(path: path, mode: .readOnly)
        isReadOnly = true
        clock = HybridClock(last: try Self.clockSetting(database))
    }

    /// The clock older versions kept in a setting (rewritten by every own write; 0 when none). Now
    /// each identity's own ops set it when the identity is first used (`catchUpClock(withOwnOpsOf:)`).
    static func clockSetting(_ database: Database) throws -> HLC {
        let last: Int64? = try database.scalar("SELECT value FROM settings WHERE key = 'hlc'")
        return HLC(raw: UInt64(bitPattern: last ?? 0))
    }

    /// Moves the clock up to the highest HLC of `user`'s own ops in the store, if it is behind it:
    /// after a restart, and after another process wrote as `user`, a new op of `user`'s comes
    /// after all of theirs even if the wall clock went back meanwhile. Their HLCs only grow along
    /// each chain (each was ticked from the one before), so the heads carry the highest; taken
    /// whole, not capped like a peer's (`HybridClock.observe`), since they are this user's own.
    /// Nothing is written per op for it: the ops carry their HLCs (a setting rewritten by every
    /// own write cost it two pages of WAL).
    func catchUpClock(withOwnOpsOf user: UserID) throws {
        guard let aid = try existingAuthorID(user) else { return }
        // CROSS JOIN keeps the heads outside: with a plain JOIN SQLite chose to scan the whole op
        // log for them (449 ms at start-up with 1,000,000 ops, against 40).
        let statement = try database.cachedStatement(
            "SELECT max(o.hlc) FROM heads h CROSS JOIN ops o ON o.pid = h.pid AND o.aid = h.aid AND o.seq = h.max_seq WHERE h.aid = ?")
        guard let raw = try statement.firstRow(.integer(aid), map: { $0.isNull(0) ? nil : $0.int64(0) }) ?? nil else { return }
        let highest = HLC(raw: UInt64(bitPattern: raw))
        if highest > clock.last { clock = HybridClock(last: highest) }
    }

    /// Row ids cached from a transaction that rolls back would point at rows that no longer exist,
    /// and ops watched since a mark may no longer be stored.
    private func forgetCachedRowsOnRollback() throws {
        try database.onRollback { [unowned self] in
            forgetCachedRows()
            pendingRebuilds.removeAll()
            opsSinceMarkAreExact = false
        }
    }

    /// Empties the caches of rows and what was read from them (after a rollback, or another
    /// process's write).
    func forgetCachedRows() {
        partitionCache.removeAll()
        partitionListCache = nil
        authorCache.removeAll()
        epochKeyCache.removeAll()
        carriedBytes.removeAll()
        membershipCache.removeAll()
        refusedSignaturesCache = nil
    }

    // MARK: Partitions

    /// Runs `body` in one transaction: the store's own transactions inside it become savepoints,
    /// and everything commits together (several applies for the price of one commit).
    public func inOneTransaction<T>(_ body: () throws -> T) throws -> T {
        try database.transaction(.immediate, body)
    }

    /// A partition known to this store.
    public struct PartitionRecord: Hashable, Sendable {
        public let pid: Int64
        public let descriptor: PartitionDescriptor
        public var joined: Bool
        /// The descriptor's id, hashed once (every write and apply looks partitions up by it).
        public let id: PartitionID

        init(pid: Int64, descriptor: PartitionDescriptor, joined: Bool) {
            (self.pid, self.descriptor, self.joined) = (pid, descriptor, joined)
            id = descriptor.id
        }
    }

    /// Records a partition (idempotent). `joined` marks partitions the user takes part in
    /// (rooms they joined); a partition known only to carry it for others is not joined.
    @discardableResult
    public func ensurePartition(_ descriptor: PartitionDescriptor, joined: Bool) throws -> PartitionRecord {
        if var record = try partition(descriptor.id) {
            if joined && !record.joined {
                try database.execute("UPDATE partitions SET joined = 1 WHERE pid = ?", .integer(record.pid))
                record.joined = true
                partitionCache[record.id] = record
                partitionListCache = nil
            }
            return record
        }
        try database.execute(
            "INSERT INTO partitions(id, kind, descriptor, joined) VALUES (?, ?, ?, ?)",
            .blob(descriptor.id.bytes), .integer(Int64(descriptor.kind.rawValue)),
            .blob(descriptor.encoded), .integer(joined ? 1 : 0))
        let record = PartitionRecord(pid: database.lastInsertRowID, descriptor: descriptor, joined: joined)
        partitionCache[record.id] = record
        partitionListCache = nil
        opsSinceMarkAreExact = false
        return record
    }

    /// Marks a partition as left (its ops stay; the node stops showing it).
    public func setJoined(_ id: PartitionID, _ joined: Bool) throws {
        try database.execute("UPDATE partitions SET joined = ? WHERE id = ?", .integer(joined ? 1 : 0), .blob(id.bytes))
        partitionCache[id] = nil
        partitionListCache = nil
    }

    /// The partition with this id, if known.
    public func partition(_ id: PartitionID) throws -> PartitionRecord? {
        if let cached = partitionCache[id] { return cached }
        let statement = try database.cachedStatement("SELECT pid, descriptor, joined FROM partitions WHERE id = ?")
        let found = try statement.firstRow(.blob(id.bytes)) { row in
            PartitionRecord(pid: row.int64(0), descriptor: try PartitionDescriptor(decoding: row.blob(1)), joined: row.int(2) != 0)
        }
        if let found { partitionCache[id] = found }
        return found
    }

    /// Every known partition, in a stable order.
    public func partitions() throws -> [PartitionRecord] {
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

    /// Number of ops held in all partitions: one count over the smallest index of `ops` (the
    /// chain index), 6× faster than a count per partition (6 against 35 ms with 1,000,000 ops),
    /// which `parley status` paid on the node's loop, start-up included.
    public func opCount() throws -> Int {
        try database.cachedStatement("SELECT count(*) FROM ops").rows { $0.int(0) }.first ?? 0
    }

    /// Number of ops held for a partition.
    public func opCount(_ partition: PartitionID) throws -> Int {
        guard let record = try self.partition(partition) else { return 0 }
        return try database.scalar("SELECT count(*) FROM ops WHERE pid = ?", .integer(record.pid)) ?? 0
    }

    /// A change counter that moves when any connection commits (to notice CLI writes).
    public var dataVersion: Int64 { get throws { try database.dataVersion } }
}
