import Identity
import Replica
import SQLite
import Sodium

/// Which ops' signatures were verified (`ops.signature_checked`, and this process's memory of
/// it), and the positions refused for a bad signature (`refused_signatures`).
extension OpLog {
    /// Whether this process verified `op`'s signature (these very signature bytes).
    func hasCheckedSignature(_ op: Operation) -> Bool { checkedSignatures.contains(SignedOpKey(op)) }

    /// Marks the stored copies of `good` (a run of one chain from `first`, all verified here)
    /// checked: only a stored copy that is the op verified here (signature bytes and all) is
    /// marked. A good signature in the link-authenticated tail authenticates the tail below it.
    func markSignaturesChecked(
        _ good: ArraySlice<Operation>, from first: UInt64, stored: [UInt64: (key: SignedOpKey, checked: Bool)], pid: Int64, aid: Int64
    ) throws {
        guard let lastGood = good.last else { return }
        let matching = good.filter { stored[$0.seq]?.key == SignedOpKey($0) }
        if matching.count == good.count {
            try database.cachedStatement(
                "UPDATE ops SET signature_checked = 1 WHERE pid = ? AND aid = ? AND seq BETWEEN ? AND ? AND signature_checked = 0"
            ).run(.integer(pid), .integer(aid), .integer(Int64(first)), .integer(Int64(lastGood.seq)))
        } else {
            for op in matching {
                try database.cachedStatement("UPDATE ops SET signature_checked = 1 WHERE pid = ? AND aid = ? AND seq = ?")
                    .run(.integer(pid), .integer(aid), .integer(Int64(op.seq)))
            }
        }
        let head = try head(pid: pid, aid: aid)
        if let tail = head.tail, tail.contains(lastGood.seq) {
            try setUncheckedFrom(lastGood.seq < head.maxSeq ? lastGood.seq + 1 : nil, pid: pid, aid: aid)
        }
    }

    /// Remembers that the op at `position` was removed for a bad signature (the oldest beyond
    /// `maxRefusedSignatures` are forgotten).
    func refuseSignature(at position: ChainPosition, nowMillis: UInt64) throws {
        try database.cachedStatement("INSERT OR REPLACE INTO refused_signatures(pid, aid, seq, refused_at) VALUES (?, ?, ?, ?)")
            .run(.integer(position.pid), .integer(position.aid), .integer(Int64(position.seq)), .integer(Int64(nowMillis)))
        try database.execute(
            """
            DELETE FROM refused_signatures WHERE (pid, aid, seq) IN
                (SELECT pid, aid, seq FROM refused_signatures ORDER BY refused_at DESC LIMIT -1 OFFSET ?)
            """, .integer(Int64(Self.maxRefusedSignatures)))
        refusedSignaturesCache = nil
    }

    /// Positions refused for a bad signature that are remembered (the oldest are forgotten
    /// beyond it): each holds one row and one set entry, and only an op whose chain was proven
    /// by a later signature and whose own signature failed adds one.
    static let maxRefusedSignatures = 4_096

    /// Op ids whose signatures this process verified, kept up to this many (then started
    /// afresh): an op pushed to several peers right after it was stored is not read back for
    /// each of them.
    static let maxRememberedSignatures = 16_384

    func noteSignatureChecked(_ op: Operation) {
        if checkedSignatures.count >= Self.maxRememberedSignatures { checkedSignatures.removeAll(keepingCapacity: true) }
        checkedSignatures.insert(SignedOpKey(op))
    }

    /// The stored ops (as far as their signatures go) and whether their signatures were checked, from `first` through
    /// `lastSeq` of its chain, with the chain's row ids (nil when the store does not hold it).
    func storedChecks(
        of first: Operation, through lastSeq: UInt64
    ) throws -> (record: PartitionRecord?, aid: Int64?, checks: [UInt64: (key: SignedOpKey, checked: Bool)]) {
        guard let record = try partition(first.partition), let aid = try existingAuthorID(first.author) else { return (nil, nil, [:]) }
        var checks: [UInt64: (key: SignedOpKey, checked: Bool)] = [:]
        try database.cachedStatement("SELECT seq, header, signature_checked FROM ops WHERE pid = ? AND aid = ? AND seq BETWEEN ? AND ?")
            .forEachRow([.integer(record.pid), .integer(aid), .integer(Int64(first.seq)), .integer(Int64(lastSeq))]) { row in
                checks[UInt64(row.int64(0))] = (SignedOpKey(storedHeader: row.blob(1)), row.int(2) != 0)
            }
        return (record, aid, checks)
    }

    /// Whether an op at `position` was removed for a bad signature and no good one took its place.
    func isRefusedSignature(_ position: ChainPosition) throws -> Bool {
        if let refused = refusedSignaturesCache { return refused.contains(position) }
        let refused = Set(
            try database.cachedStatement("SELECT pid, aid, seq FROM refused_signatures").rows { row in
                ChainPosition(pid: row.int64(0), aid: row.int64(1), seq: UInt64(row.int64(2)))
            })
        refusedSignaturesCache = refused
        return refused.contains(position)
    }

    func forgetRefusedSignature(_ position: ChainPosition) throws {
        try database.cachedStatement("DELETE FROM refused_signatures WHERE pid = ? AND aid = ? AND seq = ?")
            .run(.integer(position.pid), .integer(position.aid), .integer(Int64(position.seq)))
        refusedSignaturesCache?.remove(position)
    }

    /// How many ops this store removed for signatures that do not verify, whose places no good
    /// op has taken yet (`parley doctor`).
    public func refusedSignatureCount() throws -> Int {
        try database.scalar("SELECT count(*) FROM refused_signatures") ?? 0
    }

    func setUncheckedFrom(_ seq: UInt64?, pid: Int64, aid: Int64) throws {
        try database.cachedStatement("UPDATE heads SET unchecked_from = ? WHERE pid = ? AND aid = ?")
            .run(seq.map { .integer(Int64($0)) } ?? .null, .integer(pid), .integer(aid))
    }
}
