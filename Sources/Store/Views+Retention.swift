import Identity
import Replica
import SQLite

/// A room's retention (docs/ARCHITECTURE.md, *Retention*): the posts, edits and reactions outside
/// the room's window lose their bodies on every honest replica (`ops.body` emptied, `ops.erasure`
/// set to an empty blob: *expired*), and the room's views are rebuilt without them. Their headers
/// stay, so chains, heads and digests are equal across replicas whatever each one dropped.
///
/// The window: `days(N)`, everything stamped before now − N days is outside (checked when ops
/// apply and on the node's timer); `lastMessages(N)`, everything that sorts before the N-th
/// newest post in `(hlc, author, seq)` order is outside (a function of the op set). Policy ops,
/// deletes and tasks never expire.
extension Views {
    /// The op types that expire: a message's words (posts, edits) and reactions.
    /// (0x10, 0x11, 0x13: the SQL below names them as 16, 17, 19.)
    static let expiringTypes = [OperationType.post, .edit, .react].map { Int64($0.rawValue) }

    /// The room's retention, cached per partition (`.all` for a room without a policy).
    func retention(pid: Int64) throws -> Retention {
        if let cached = retentionCache[pid] { return cached }
        let retention = try roomPolicy(pid: pid)?.policy.retention ?? .all
        retentionCache[pid] = retention
        return retention
    }

    /// An op was applied in a room: its retention is enforced at the end of the transaction.
    func noteRoomWrite(pid: Int64, nowMillis: UInt64) throws {
        guard try retention(pid: pid) != .all else { return }
        retentionDue[pid] = max(retentionDue[pid] ?? 0, nowMillis)
    }

    /// Expires what falls outside each noted room's retention, and rebuilds their views.
    func flushRetention() throws {
        while let (pid, now) = retentionDue.first {
            retentionDue[pid] = nil
            if try expireOutsideRetention(pid: pid, nowMillis: now) > 0 { pendingRebuilds.insert(pid) }
        }
    }

    /// The first `(hlc, author key, seq)` inside a room's window (`key` empty: any author).
    struct WindowStart {
        var hlc: UInt64
        var key: [UInt8]
        var seq: UInt64

        /// Whether an op with this place sorts before the window.
        func isAfter(_ op: Operation) -> Bool {
            if op.hlc.raw != hlc { return op.hlc.raw < hlc }
            let author = op.author.publicKey
            if author != key { return author.lexicographicallyPrecedes(key) }
            return op.seq < seq
        }
    }

    /// The start of the room's window: ops that sort before it are outside; nil when nothing is
    /// (retention `all`, or fewer posts than it keeps).
    func retentionStart(pid: Int64, nowMillis: UInt64) throws -> WindowStart? {
        switch try retention(pid: pid) {
        case .all:
            return nil
        case .days(let days):
            let span = UInt64(days) * 86_400_000
            guard nowMillis > span else { return nil }
            return WindowStart(hlc: HLC(wallMillis: nowMillis - span, counter: 0).raw, key: [], seq: 0)
        case .lastMessages(let count):
            // Every post not expired is in `messages` (deleted ones too), and every expired one
            // sorts before the window: the N-th newest row is the N-th newest post.
            return try database.cachedStatement(
                """
                SELECT m.hlc, a.key, m.seq FROM messages m JOIN authors a ON a.aid = m.aid WHERE m.pid = ?
                ORDER BY m.hlc DESC, a.key DESC, m.seq DESC LIMIT 1 OFFSET ?
                """
            ).firstRow(.integer(pid), .integer(Int64(count) - 1)) { row in
                WindowStart(hlc: UInt64(bitPattern: row.int64(0)), key: row.blob(1), seq: UInt64(row.int64(2)))
            }
        }
    }

    /// Drops the bodies of the room's posts, edits and reactions outside its window; returns
    /// how many. Freed content is zeroed (`secure_delete`) and the WAL is emptied after the commit.
    func expireOutsideRetention(pid: Int64, nowMillis: UInt64) throws -> Int {
        guard let start = try retentionStart(pid: pid, nowMillis: nowMillis) else { return 0 }
        let headers = try database.cachedStatement(
            """
            UPDATE ops SET body = X'', erasure = X''
            WHERE pid = ?1 AND type IN (16, 17, 19) AND erasure IS NULL
                AND (hlc < ?2 OR (hlc = ?2 AND ((SELECT key FROM authors WHERE aid = ops.aid), seq) < (?3, ?4)))
            RETURNING header
            """
        ).rows(.integer(pid), .integer(Int64(bitPattern: start.hlc)), .blob(start.key), .integer(Int64(start.seq))) { $0.blob(0) }
        guard !headers.isEmpty else { return 0 }
        log.noteExpired(headers.map { SignedOpKey(storedHeader: $0).id })
        database.truncateWALAfterCommit()
        return headers.count
    }

    /// Whether an op that arrived without its body is outside its room's window by this
    /// replica's view. `batchPosts`: the posts of the batch being applied, which count as held.
    func isOutsideRetention(_ op: Operation, pid: Int64, nowMillis: UInt64, batchPosts: [ClockKey]) throws -> Bool {
        let key = ClockKey(op)
        switch try retention(pid: pid) {
        case .all:
            return false
        case .days:
            guard let start = try retentionStart(pid: pid, nowMillis: nowMillis) else { return false }
            return start.isAfter(op)
        case .lastMessages(let count):
            var later = Set(batchPosts.filter { key < $0 })
            later.formUnion((seenPosts[pid] ?? []).filter { key < $0 })
            guard later.count < Int(count) else { return true }
            try database.cachedStatement(
                """
                SELECT m.hlc, a.key, m.seq FROM messages m JOIN authors a ON a.aid = m.aid
                WHERE m.pid = ? AND (m.hlc, a.key, m.seq) > (?, ?, ?) ORDER BY m.hlc, a.key, m.seq LIMIT ?
                """
            ).forEachRow([.integer(pid), .integer(Int64(bitPattern: op.hlc.raw)), .blob(op.author.publicKey), .integer(Int64(op.seq)), .integer(Int64(count))])
            { row in
                later.insert(ClockKey(hlc: HLC(raw: UInt64(bitPattern: row.int64(0))), author: UserID(publicKey: row.blob(1))!, seq: UInt64(row.int64(2))))
            }
            return later.count >= Int(count)
        }
    }

    /// Remembers the posts of an authentic run (`seenPosts`).
    func rememberPosts(_ posts: [ClockKey], pid: Int64) {
        if seenPosts.values.reduce(0, { $0 + $1.count }) + posts.count > Self.maxSeenPosts { seenPosts.removeAll() }
        seenPosts[pid, default: []].formUnion(posts.prefix(Self.maxSeenPosts))
    }

    /// Rooms with a retention by days: what fell outside since the last look expires (the node's timer).
    public func expireByClock(nowMillis: UInt64) throws -> Int {
        var expired = 0
        // Read first, outside a write transaction: most nodes keep no room by days.
        let pids = try database.cachedStatement("SELECT pid FROM room_policies WHERE retention LIKE '%d'").rows { $0.int64(0) }
        guard !pids.isEmpty else { return 0 }
        try database.transaction(.immediate) {
            for pid in pids {
                let count = try expireOutsideRetention(pid: pid, nowMillis: nowMillis)
                if count > 0 { pendingRebuilds.insert(pid) }
                expired += count
            }
            try flushPendingRebuilds()
        }
        return expired
    }
}
