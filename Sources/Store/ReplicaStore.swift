import Identity
import Replica
import SQLite
import Sodium
import Wire

/// A node's replicas of all its partitions, in one SQLite file (docs/DESIGN.md §5): the
/// composition of its parts, which share the file's one `Database` and each own their tables'
/// caches — the op log and heads (`log`), the materialized views and their queries (`views`),
/// keys and epochs (`keys`), blobs (`blobs`), the directory and presence (`directory`), and
/// carrying for others (`carrier`), forks and cut chains (`forks`), and what an op needs before
/// it leaves the node (`outbound`). The store itself holds the clock and the write paths that
/// span parts: applying ops (the rules, then the log, the views and the keys) and authoring
/// (with conversations' keys, invites and the inbox). Callers ask the part that does the job;
/// export and import are `OpArchiver`'s, over a store, and salvage is `Salvage`'s, over a file.
///
/// Not thread-safe: one owner (an actor, or a command-line process) per instance, and one
/// instance per file per process; its parts belong to the same owner. Another process may open
/// the same file (WAL); it notices new ops through `dataVersion`.
public final class ReplicaStore {
    public let database: Database
    /// The hybrid logical clock for ops this store authors; persisted with each local op.
    public internal(set) var clock: HybridClock
    /// The op log: partitions, authors, ops, heads, fork proofs, checked signatures.
    public let log: OpLog
    /// Keys and epochs: local identities, epoch keys, membership.
    public let keys: KeyRing
    /// The materialized views and the queries over them.
    public let views: Views
    /// Attachments' and avatars' content.
    public let blobs: Blobs
    /// Profiles, and when peers were last seen.
    public let directory: Directory
    /// Which keys are devices of which person, and which devices are revoked.
    public let devices: Devices
    /// Partitions carried for others, and their quota.
    public let carrier: Carrier
    /// Recording fork proofs, and cutting chains short.
    public let forks: Forks
    /// The signature checks an op passes before it leaves the node.
    public let outbound: OutboundChecks
    /// Opened with `init(readOnlyPath:)`: keys opened from grants stay in memory only.
    let isReadOnly: Bool
    /// The posts of the batch `apply(_:)` is applying, when it holds an expired op: they count
    /// as held when that op is checked against its room's retention.
    var batchPosts: [ClockKey] = []

    /// The parts over `database`, each given the parts it reads.
    private init(database: Database, isReadOnly: Bool) throws {
        try ReadableViews.defineFunctions(on: database)
        self.database = database
        self.isReadOnly = isReadOnly
        clock = HybridClock(last: try Self.clockSetting(database))
        log = OpLog(database: database, isReadOnly: isReadOnly)
        keys = KeyRing(database: database, log: log)
        devices = Devices(database: database, log: log)
        views = Views(database: database, log: log, keys: keys, devices: devices, isReadOnly: isReadOnly)
        blobs = Blobs(database: database, log: log, keys: keys)
        directory = Directory(database: database, devices: devices)
        carrier = Carrier(database: database, log: log, keys: keys)
        forks = Forks(database: database, log: log, views: views, carrier: carrier)
        outbound = OutboundChecks(database: database, log: log, views: views, forks: forks, isReadOnly: isReadOnly)
    }

    /// Opens (creating if needed) the store at `path` and brings its schema up to date.
    /// `":memory:"` gives a private in-memory store (tests). `vfs`: the SQLite VFS to open the
    /// file through, by its registered name (tests put a file layer that cuts the power there);
    /// nil is the default.
    ///
    /// `key` (the store key, `StoreKeyFile`): the file is encrypted page by page under it
    /// (docs/DESIGN.md §5.1); a store still in the plain format of earlier versions is converted
    /// first, with nothing lost (`Database.encryptPlainFile`). Nil keeps a plain file (tests,
    /// benchmarks of the plain format).
    public convenience init(path: String, vfs: String? = nil, key: SecureBytes? = nil) throws {
        let keyBytes = key?.bytes
        if let keyBytes, Database.fileFormat(at: path) == .plain {
            try Database.encryptPlainFile(at: path, key: keyBytes, vfs: vfs)
        }
        let database = try Database(path: path, vfs: vfs, cipherKey: keyBytes)
        // Checkpoint on a thread of its own (in the commit, its 75–100 ms stalled every apply
        // behind it) every 3,072–5,120 frames of WAL (3–5 MiB with `Database.newFilePageSize`,
        // 12–20 MiB in a store made with 4 KiB pages; drawn anew each time: nodes on one host that hold
        // the same ops would otherwise checkpoint together); what stays in the commit is the last
        // few frames' copy that lets the WAL restart, a few milliseconds. 64 MiB measured worse.
        try database.checkpointInBackground(pages: 4_096, jitter: 0.5, backstopPages: 32_768)
        try database.migrate(Schema.migrations)
        try self.init(database: database, isReadOnly: false)
        try forgetCachedRowsOnRollback()
        try log.ensurePartition(.directory, joined: true)
    }

    /// Opens an existing store read-only (commands that only read, while a node may be writing).
    /// `key`: the store key, for an encrypted store (ignored for a plain one).
    public convenience init(readOnlyPath path: String, key: SecureBytes? = nil) throws {
        try self.init(database: try Database(path: path, mode: .readOnly, cipherKey: key?.bytes), isReadOnly: true)
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
        guard let aid = try log.existingAuthorID(user) else { return }
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
            views.rolledBack()
            log.rolledBack()
        }
    }

    /// Empties the caches of rows and what was read from them (after a rollback, or another
    /// process's write): each part forgets its own.
    func forgetCachedRows() {
        views.retentionCache.removeAll()
        log.forgetCachedRows()
        keys.forgetCachedRows()
        devices.forgetCachedRows()
        carrier.forgetCachedRows()
    }

    // MARK: Transactions and partitions

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

    /// A change counter that moves when any connection commits (to notice CLI writes).
    public var dataVersion: Int64 { get throws { try database.dataVersion } }

    /// Runs `body` over one committed state of the file (a read transaction), with nothing cached
    /// from before: for a connection that only reads beside another that writes (the web UI's
    /// reads beside its node), where any commit may have changed any cached row.
    public func readingOneState<T>(_ body: () throws -> T) throws -> T {
        forgetCachedRows()
        return try database.transaction(.deferred, body)
    }

    /// Forgets what this connection cached and reloads the clock, after another process wrote
    /// to the file (seen as a change of `dataVersion`): joined flags may have changed, and the
    /// other process's ops may carry later timestamps that local ops must follow.
    public func refreshAfterExternalWrite() throws {
        forgetCachedRows()
        // Older versions kept the clock in a setting; now the other process's ops carry it.
        let persisted = try Self.clockSetting(database)
        if persisted > clock.last { clock = HybridClock(last: persisted) }
        for user in keys.localUsers { try catchUpClock(withOwnOpsOf: user) }
    }
}
