import Identity
import Replica
import SQLite

/// Carrying partitions for others: which partitions this node only carries, the bytes each
/// holds, and the quota over which their ops are refused.
///
/// Owns the bytes-per-partition cache (`carriedBytes`), kept up to date as ops are stored and
/// dropped when ops are removed or rows forgotten, and the quota. Not thread-safe: its store's
/// one owner uses it.
public final class Carrier {
    let database: Database
    let log: OpLog
    let keys: KeyRing

    /// How many bytes of ops this node keeps for each partition it only carries for others (a
    /// conversation none of its identities belongs to, someone else's inbox). Over it, such ops
    /// are refused with `.rule(.quotaExceeded)` — the carrier stops carrying; members never
    /// apply a quota, so they all keep the same op set.
    public var carrierQuotaBytes: Int = 64 << 20
    /// Bytes held per carried partition (loaded on first use, then kept up to date).
    var carriedBytes: [Int64: Int] = [:]

    init(database: Database, log: OpLog, keys: KeyRing) {
        (self.database, self.log, self.keys) = (database, log, keys)
    }

    /// Empties the byte counts read from the file (after a rollback, or another process's write).
    func forgetCachedRows() { carriedBytes.removeAll() }

    /// Drops a partition's byte count (ops were removed from it).
    func forgetStoredBytes(pid: Int64) { carriedBytes[pid] = nil }
}

/// Carrying partitions for others (docs/DESIGN.md §3.5: "a node's quota bounds what it carries").
///
/// A node carries a conversation it does not belong to (store and forward for offline members)
/// and other users' inboxes. It keeps at most `carrierQuotaBytes` of ops for each; past that it
/// refuses further ops with `.rule(.quotaExceeded)`, which may resolve later, so gossip stops
/// fetching that chain without counting the peer as misbehaving. The carrier's digest then
/// differs from the members' — it simply stopped carrying. Members never apply a quota, so
/// among members the op set, and therefore every view, stays the same.
extension Carrier {
    /// Whether this node only carries the partition: a conversation not joined and of which no
    /// local identity is (ever) a member, an inbox that is not a local identity's, a private
    /// room whose passphrase this node was never given (not joined), or a room not joined (a peer
    /// offered it, or the user left it).
    public func isCarried(_ partition: PartitionID) throws -> Bool {
        guard let record = try log.partition(partition) else { return false }
        return try isCarried(record)
    }

    func isCarried(_ record: PartitionRecord) throws -> Bool {
        switch record.descriptor {
        case .conversation:
            if record.joined { return false }
            for user in keys.localUsers where try keys.isEverMember(user, pid: record.pid) { return false }
            return true
        case .inbox(let owner):
            return !record.joined && keys.localIdentity(owner) == nil
        case .privateRoom, .room:
            return !record.joined
        case .directory, .ownData:
            return false
        }
    }

    /// Bytes of ops (headers and bodies) held for a partition.
    public func storedBytes(_ partition: PartitionID) throws -> Int {
        guard let record = try log.partition(partition) else { return 0 }
        return try storedBytes(pid: record.pid)
    }

    func storedBytes(pid: Int64) throws -> Int {
        if let known = carriedBytes[pid] { return known }
        let total: Int = try database.scalar("SELECT coalesce(sum(length(header) + length(body)), 0) FROM ops WHERE pid = ?", .integer(pid)) ?? 0
        carriedBytes[pid] = total
        return total
    }

    /// Whether storing `op` would take a carried partition over the quota.
    func exceedsCarrierQuota(_ op: Operation, record: PartitionRecord) throws -> Bool {
        guard record.descriptor.kind == .conversation || record.descriptor.kind == .inbox || record.descriptor.kind == .privateRoom,
            try isCarried(record)
        else { return false }
        return try storedBytes(pid: record.pid) + op.header.count + op.body.count > carrierQuotaBytes
    }

    /// Keeps the byte count of a partition up to date after an insert (if it is being tracked).
    func noteStored(_ op: Operation, pid: Int64) {
        if let known = carriedBytes[pid] { carriedBytes[pid] = known + op.header.count + op.body.count }
    }
}
