import Identity
import Replica
import SQLite

/// A room's policy as a view (docs/DESIGN.md §3.4, *Room policies*): resolved from every policy
/// op of the room (`RoomPolicyState`), so it is a function of the op set.
public struct RoomPolicyView: Hashable, Sendable {
    /// The author of the first policy op in `(hlc, author, seq)` order.
    public var owner: UserID
    public var policy: RoomPolicy
}

extension Views {
    /// Re-resolves a room's owner and policy from all its policy ops (they are few).
    func resolveRoomPolicy(pid: Int64) throws {
        retentionCache[pid] = nil
        let events = try database.cachedStatement(
            "SELECT o.header, o.body FROM policy_events e JOIN ops o ON o.oid = e.oid WHERE e.pid = ?"
        ).rows(.integer(pid)) { row -> RoomPolicyState.Event? in
            let op = try Operation(header: row.blob(0), body: row.blob(1))
            guard case .roomPolicy(let policy)? = try? OperationBody(type: op.type, decoding: op.body) else { return nil }
            return RoomPolicyState.Event(author: op.author, hlc: op.hlc, seq: op.seq, policy: policy)
        }.compactMap { $0 }
        guard let state = RoomPolicyState.resolve(events) else {
            try database.cachedStatement("DELETE FROM room_policies WHERE pid = ?").run(.integer(pid))
            return
        }
        try database.cachedStatement("INSERT OR REPLACE INTO room_policies(pid, owner, topic, retention, history) VALUES (?, ?, ?, ?, ?)").run(
            .integer(pid), .blob(state.owner.publicKey), .text(state.policy.topic), .text(state.policy.retention.description),
            .integer(state.policy.historyForNewJoiners ? 1 : 0))
    }

    /// The room's policy and owner; nil when nobody set one (the default policy holds).
    public func roomPolicy(_ partition: PartitionID) throws -> RoomPolicyView? {
        guard let record = try log.partition(partition) else { return nil }
        return try roomPolicy(pid: record.pid)
    }

    func roomPolicy(pid: Int64) throws -> RoomPolicyView? {
        try database.cachedStatement("SELECT owner, topic, retention, history FROM room_policies WHERE pid = ?").firstRow(.integer(pid)) { row in
            guard let owner = UserID(publicKey: row.blob(0)), let retention = Retention(text: row.text(2)) else { return nil }
            return RoomPolicyView(owner: owner, policy: RoomPolicy(topic: row.text(1), retention: retention, historyForNewJoiners: row.int(3) != 0))
        } ?? nil
    }

    /// How many people a room has as this node sees it: the authors of its chains (everyone who
    /// wrote in it), and `me` when this node's user joined it without writing.
    public func roomPeople(_ partition: PartitionID, me: UserID?) throws -> Int {
        guard let record = try log.partition(partition) else { return 0 }
        let authors = try database.cachedStatement("SELECT count(*) FROM heads WHERE pid = ?").firstRow(.integer(record.pid)) { $0.int(0) } ?? 0
        guard let me, record.joined else { return authors }
        let wrote =
            try database.cachedStatement("SELECT 1 FROM heads h JOIN authors a ON a.aid = h.aid WHERE h.pid = ? AND a.key = ?")
            .firstRow(.integer(record.pid), .blob(me.publicKey)) { _ in true } ?? false
        return wrote ? authors : authors + 1
    }
}
