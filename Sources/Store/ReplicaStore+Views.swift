import Identity
import Replica
import SQLite
import Wire

/// The materialized views: each op's effect, and rebuilding them from the log.
extension ReplicaStore {
    /// Applies one stored op's effect on the views. Runs for live ops and during rebuilds, so a
    /// rebuild gives exactly the live views. `rebuilding` defers membership resolution to the end.
    func applyViews(_ op: Operation, body: OperationBody, oid: Int64, record: PartitionRecord, aid: Int64, rebuilding: Bool) throws {
        let pid = record.pid
        switch body {
        case .post(let text, let attachments, let location, let replyTo):
            try database.cachedStatement(
                """
                INSERT INTO messages(oid, pid, aid, seq, hlc, op_id, text, attachments, latitude, longitude, reply_to)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
            ).run(
                .integer(oid), .integer(pid), .integer(aid), .integer(Int64(op.seq)), .integer(Int64(bitPattern: op.hlc.raw)),
                .blob(op.id.bytes), .text(text), attachments.isEmpty ? .null : .blob(encodeAttachments(attachments)),
                location.map { .real($0.latitude) } ?? .null, location.map { .real($0.longitude) } ?? .null,
                replyTo.map { .blob($0.bytes) } ?? .null)
        case .edit(_, let targetSeq, let text):
            // Same author, applied in seq order: the latest edit is the last one applied. The
            // target was checked to be the author's post at `targetSeq` before this op was stored.
            try database.cachedStatement(
                """
                UPDATE messages SET text = ?, edited = 1 WHERE oid = (SELECT oid FROM ops WHERE pid = ? AND aid = ? AND seq = ?) AND deleted = 0
                """
            ).run(.text(text), .integer(pid), .integer(aid), .integer(Int64(targetSeq)))
        case .delete(_, let targetSeq):
            try database.cachedStatement(
                """
                UPDATE messages SET text = '', attachments = NULL, latitude = NULL, longitude = NULL, deleted = 1
                WHERE oid = (SELECT oid FROM ops WHERE pid = ? AND aid = ? AND seq = ?)
                """
            ).run(.integer(pid), .integer(aid), .integer(Int64(targetSeq)))
        case .react(let target, let emoji, let on):
            try database.cachedStatement("INSERT OR REPLACE INTO reactions(pid, target, reactor, emoji, on_) VALUES (?, ?, ?, ?, ?)")
                .run(.integer(pid), .blob(target.bytes), .integer(aid), .text(emoji), .integer(on ? 1 : 0))
        case .profile(_, let nick, let displayName, let status, let presence, let avatar):
            try database.cachedStatement(
                """
                INSERT INTO profiles(aid, nick, display_name, status, presence, avatar) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT(aid) DO UPDATE SET nick = coalesce(excluded.nick, nick), display_name = coalesce(excluded.display_name, display_name),
                    status = coalesce(excluded.status, status), presence = coalesce(excluded.presence, presence), avatar = coalesce(excluded.avatar, avatar)
                """
            ).run(
                .integer(aid), nick.map { .text($0) } ?? .null, displayName.map { .text($0) } ?? .null,
                status.map { .text($0) } ?? .null, presence.map { .integer(Int64($0.rawValue)) } ?? .null,
                avatar.map { .blob(encodeAttachments([$0])) } ?? .null)
        case .conversationCreate(let name, _), .conversationRename(let name):
            let clock = ClockKey(op)
            try database.cachedStatement(
                """
                INSERT INTO conversations(pid, name, name_clock) VALUES (?, ?, ?)
                ON CONFLICT(pid) DO UPDATE SET name = excluded.name, name_clock = excluded.name_clock WHERE excluded.name_clock > name_clock
                """
            ).run(.integer(pid), .text(name), .blob(clock.bytes))
            if case .conversationCreate = body { try noteMembershipEvent(oid: oid, record: record, rebuilding: rebuilding) }
        case .memberAdd, .memberRemove, .memberLeave:
            try noteMembershipEvent(oid: oid, record: record, rebuilding: rebuilding)
        case .taskCreate, .taskUpdate(_, _, _, _), .taskDelete:
            let taskID: OpID
            switch body {
            case .taskUpdate(let target, _, _, _), .taskDelete(let target): taskID = target
            default: taskID = op.id
            }
            let load = try database.cachedStatement("SELECT state FROM tasks WHERE pid = ? AND task_id = ?")
            var state = try load.rows(.integer(pid), .blob(taskID.bytes)) { try TaskState(decoding: $0.blob(0)) }.first ?? TaskState()
            state.apply(body, author: op.author, hlc: op.hlc, seq: op.seq)
            try database.cachedStatement(
                """
                INSERT OR REPLACE INTO tasks(pid, task_id, state, created, deleted, created_hlc) VALUES (?, ?, ?, ?, ?, ?)
                """
            ).run(
                .integer(pid), .blob(taskID.bytes), .blob(state.encoded), .integer(state.created ? 1 : 0),
                .integer(state.deleted ? 1 : 0), state.createdAt.map { .integer(Int64(bitPattern: $0.raw)) } ?? .null)
        case .readMarker(let target, let position):
            try database.cachedStatement(
                """
                INSERT INTO read_markers(owner, target, position) VALUES (?, ?, ?)
                ON CONFLICT(owner, target) DO UPDATE SET position = max(position, excluded.position)
                """
            ).run(.blob(op.author.publicKey), .blob(target.bytes), .integer(Int64(bitPattern: position.raw)))
        }
    }

    private func noteMembershipEvent(oid: Int64, record: PartitionRecord, rebuilding: Bool) throws {
        try database.cachedStatement("INSERT INTO membership_events(oid, pid) VALUES (?, ?)").run(.integer(oid), .integer(record.pid))
        if !rebuilding { try resolveMembership(record) }
    }

    /// Recomputes a conversation's members from all its membership ops (they are few).
    func resolveMembership(_ record: PartitionRecord) throws {
        guard case .conversation(let creator, _) = record.descriptor else { return }
        let rows = try database.cachedStatement(
            """
            SELECT o.header, o.body FROM membership_events e JOIN ops o ON o.oid = e.oid WHERE e.pid = ?
            """
        ).rows(.integer(record.pid)) { try Operation(header: $0.blob(0), body: $0.blob(1)) }
        var events: [Membership.Event] = []
        for op in rows {
            let action: Membership.Event.Action
            switch try? OperationBody(type: op.type, decoding: op.body) {
            case .conversationCreate(_, let members): action = .create(members: members)
            case .memberAdd(let user): action = .add(user)
            case .memberRemove(let user): action = .remove(user)
            case .memberLeave: action = .leave
            default: continue
            }
            events.append(Membership.Event(author: op.author, hlc: op.hlc, action: action))
        }
        let state = Membership.resolve(creator: creator, events: events)
        try database.cachedStatement("DELETE FROM members WHERE pid = ?").run(.integer(record.pid))
        let insert = try database.cachedStatement("INSERT INTO members(pid, user, current) VALUES (?, ?, ?)")
        for user in state.everMember.sorted() {
            try insert.run(.integer(record.pid), .blob(user.publicKey), .integer(state.current.contains(user) ? 1 : 0))
        }
    }

    // MARK: Forks

    /// Stores a fork proof and excludes the author's ops from the fork point on (DESIGN §3.3).
    /// In a conversation, authors whose membership came only through excluded ops lose their
    /// ops too, so every replica ends with the same set whatever it had received.
    func recordFork(_ proof: ForkProof, record: PartitionRecord, aid: Int64) throws {
        let pid = record.pid
        let current = try head(pid: pid, aid: aid)
        if let frozen = current.frozenAt, frozen <= proof.seq { return }
        try database.cachedStatement("INSERT OR REPLACE INTO fork_proofs(pid, aid, seq, proof) VALUES (?, ?, ?, ?)")
            .run(.integer(pid), .integer(aid), .integer(Int64(proof.seq)), .blob(proof.encoded))
        try truncate(pid: pid, aid: aid, from: proof.seq, frozen: true)
        if record.descriptor.kind == .conversation {
            try database.execute("DELETE FROM membership_events WHERE pid = ? AND oid NOT IN (SELECT oid FROM ops WHERE pid = ?)", .integer(pid), .integer(pid))
            while true {
                try resolveMembership(record)
                let outsiders = try database.prepare(
                    """
                    SELECT DISTINCT h.aid FROM heads h JOIN authors a ON a.aid = h.aid
                    WHERE h.pid = ? AND h.max_seq > 0 AND a.key NOT IN (SELECT user FROM members WHERE pid = ?)
                    """
                ).rows(.integer(pid), .integer(pid)) { $0.int64(0) }
                if outsiders.isEmpty { break }
                for outsider in outsiders { try truncate(pid: pid, aid: outsider, from: 1, frozen: false) }
                try database.execute(
                    "DELETE FROM membership_events WHERE pid = ? AND oid NOT IN (SELECT oid FROM ops WHERE pid = ?)", .integer(pid), .integer(pid))
            }
        }
        try rebuildViews(record)
    }

    /// Applies a fork proof received from a peer. Returns false if it changed nothing.
    @discardableResult
    public func apply(_ proof: ForkProof) throws -> Bool {
        try database.transaction(.immediate) {
            guard let record = try partition(proof.partition) else { return false }
            let aid = try authorID(proof.author)
            if let frozen = try head(pid: record.pid, aid: aid).frozenAt, frozen <= proof.seq { return false }
            try recordFork(proof, record: record, aid: aid)
            return true
        }
    }

    /// Fork proofs held for a partition.
    public func forkProofs(_ partition: PartitionID) throws -> [ForkProof] {
        guard let record = try self.partition(partition) else { return [] }
        return try database.prepare("SELECT proof FROM fork_proofs WHERE pid = ? ORDER BY seq").rows(.integer(record.pid)) {
            try ForkProof(encoded: $0.blob(0))
        }
    }

    private func truncate(pid: Int64, aid: Int64, from seq: UInt64, frozen: Bool) throws {
        try database.execute("DELETE FROM ops WHERE pid = ? AND aid = ? AND seq >= ?", .integer(pid), .integer(aid), .integer(Int64(seq)))
        let below = seq > 1 ? try storedOp(pid: pid, aid: aid, seq: seq - 1) : nil
        if below == nil && !frozen {
            try database.execute("DELETE FROM heads WHERE pid = ? AND aid = ?", .integer(pid), .integer(aid))
            return
        }
        try database.execute(
            """
            INSERT INTO heads(pid, aid, max_seq, head_id, frozen_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT(pid, aid) DO UPDATE SET max_seq = excluded.max_seq, head_id = excluded.head_id, frozen_at = excluded.frozen_at
            """, .integer(pid), .integer(aid), .integer(Int64(below == nil ? 0 : seq - 1)), .blob((below?.id ?? .zero).bytes),
            frozen ? .integer(Int64(seq)) : .null)
    }

    // MARK: Rebuilding

    /// Rebuilds every view from the op log. The result must equal the live views.
    public func rebuildViews() throws {
        try database.transaction(.immediate) {
            for table in Schema.viewTables { try database.execute("DELETE FROM \(table)") }
            for record in try partitions() { try replay(record) }
        }
    }

    /// Rebuilds one partition's views from its ops.
    func rebuildViews(_ record: PartitionRecord) throws {
        let pid = SQLValue.integer(record.pid)
        for table in ["messages", "reactions", "conversations", "membership_events", "members", "tasks"] {
            try database.execute("DELETE FROM \(table) WHERE pid = ?", pid)
        }
        switch record.descriptor {
        case .directory: try database.execute("DELETE FROM profiles")
        case .ownData(let owner): try database.execute("DELETE FROM read_markers WHERE owner = ?", .blob(owner.publicKey))
        default: break
        }
        try replay(record)
    }

    private func replay(_ record: PartitionRecord) throws {
        let rows = try database.prepare("SELECT oid, aid, header, body FROM ops WHERE pid = ? ORDER BY aid, seq").rows(.integer(record.pid)) {
            ($0.int64(0), $0.int64(1), try Operation(header: $0.blob(2), body: $0.blob(3)))
        }
        for (oid, aid, op) in rows {
            guard case .success(let body) = PartitionRules.check(op, in: record.descriptor) else {
                throw StoreError.damaged("stored op \(op.id) no longer passes its partition's rules")
            }
            try applyViews(op, body: body, oid: oid, record: record, aid: aid, rebuilding: true)
        }
        try resolveMembership(record)
    }
}

/// Attachments as stored in the messages view: a count, then each attachment's fields.
func encodeAttachments(_ attachments: [Attachment]) -> [UInt8] {
    var w = ByteWriter()
    w.u8(UInt8(attachments.count))
    for a in attachments {
        w.string16(a.name); w.u64(a.size); w.string16(a.mime); w.bytes32(a.hash)
    }
    return w.bytes
}

func decodeAttachments(_ bytes: [UInt8]) -> [Attachment] {
    guard !bytes.isEmpty else { return [] }
    var r = ByteReader(bytes)
    guard let count = try? r.u8() else { return [] }
    var out: [Attachment] = []
    for _ in 0..<count {
        guard let name = try? r.string16("name"), let size = try? r.u64(), let mime = try? r.string16("mime"), let hash = try? r.bytes32("hash") else { break }
        out.append(Attachment(name: name, size: size, mime: mime, hash: hash))
    }
    return out
}
