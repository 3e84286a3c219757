import Identity
import Replica
import SQLite
import Wire

/// The materialized views (docs/DESIGN.md §5): messages, reactions, profiles, conversations,
/// members, tasks, read markers and receipts, grants and the attachments' hashes, each a
/// function of the op set and of the epoch keys this node holds; the queries over them; and
/// their rebuilds from the log.
///
/// Owns the view tables (`Schema.viewTables`) and the set of partitions whose views must be
/// rebuilt before the transaction ends (a key arrived, or a membership changed, that changes
/// which stored ops take effect). Reads ops from the log and keys and membership from the key
/// ring; writes nothing of theirs but through them. Not thread-safe: its store's one owner uses it.
public final class Views {
    let database: Database
    let log: OpLog
    let keys: KeyRing
    /// Who is whose: a device's ops count for its person.
    let devices: Devices
    /// Opened with `ReplicaStore.init(readOnlyPath:)`: views are never rebuilt.
    let isReadOnly: Bool
    /// Partitions whose views must be rebuilt before the transaction ends: a key arrived that
    /// opens ops already stored.
    var pendingRebuilds: Set<Int64> = []
    /// Each room's retention, read once (`retention(pid:)`); forgotten when a policy changes,
    /// on rollback and after another process wrote.
    var retentionCache: [Int64: Retention] = [:]
    /// Rooms written in this transaction whose retention is enforced before it ends, with the
    /// clock of the write (`noteRoomWrite`).
    var retentionDue: [Int64: UInt64] = [:]
    /// Posts of authentic runs that brought an op still inside its room's window here, by room
    /// (at most `maxSeenPosts` in all): they count as held when the other chains' ops that
    /// arrived without their bodies are checked, which breaks the wait of two chains whose
    /// old ops each need the other's newer posts. Never stored: a restart asks again.
    var seenPosts: [Int64: Set<ClockKey>] = [:]
    static let maxSeenPosts = 4_096

    init(database: Database, log: OpLog, keys: KeyRing, devices: Devices, isReadOnly: Bool) {
        (self.database, self.log, self.keys, self.devices, self.isReadOnly) = (database, log, keys, devices, isReadOnly)
    }

    /// Makes the partition's views rebuilt at the end of the transaction (`flushPendingRebuilds`).
    func rebuildAtEnd(pid: Int64) { pendingRebuilds.insert(pid) }

    /// After a rollback: nothing of the rolled-back transaction is left to rebuild.
    func rolledBack() {
        pendingRebuilds.removeAll()
        retentionDue.removeAll()
        retentionCache.removeAll()
    }
}

/// The materialized views: each op's effect, and rebuilding them from the log.
///
/// Views are a function of the op set and of the epoch keys this node holds: an encrypted op
/// takes effect only where a key for its epoch opens it, and rules that need its plaintext (an
/// edit or delete must target the author's own earlier post) are checked here, not at
/// acceptance. A rule-breaking encrypted op is therefore stored everywhere — carriers cannot
/// tell — and has no effect on any member's views.
extension Views {
    /// Applies one stored op's effect on the views. Runs for live ops and during rebuilds, so a
    /// rebuild gives exactly the live views. `rebuilding` defers membership resolution to the end.
    func applyViews(_ op: Operation, checked: CheckedBody, oid: Int64, record: PartitionRecord, aid: Int64, rebuilding: Bool) throws {
        switch checked {
        case .plain(let body):
            try applyViews(op, body: body, oid: oid, record: record, aid: aid, rebuilding: rebuilding)
        case .encrypted(let sealed):
            // Nodes without a key for the epoch (carriers, removed members) store it unread. What
            // a former member wrote at or after their removal (with a key they kept) is ignored,
            // as is anything by an author whose add never took effect.
            // A private room has no membership: whoever holds the passphrase writes there.
            if record.descriptor.kind == .conversation {
                guard try Self.isShown(author: devices.person(of: op.author), hlc: op.hlc, keys.membershipState(pid: record.pid)) else { return }
            }
            guard let body = try keys.openBody(op, sealed, pid: record.pid) else { return }
            try applyViews(op, body: body, oid: oid, record: record, aid: aid, rebuilding: rebuilding)
        case .sealed:
            break  // invites: their owner reads them with `processInbox`
        case .erased(let erasure):
            try applyErasedViews(op, erasure: erasure, oid: oid, pid: record.pid, aid: aid)
        case .expired:
            break  // outside the room's retention: no words, no effect
        }
    }

    private func applyViews(_ op: Operation, body: OperationBody, oid: Int64, record: PartitionRecord, aid: Int64, rebuilding: Bool) throws {
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
            try noteAttachments(attachments, pid: pid, oid: oid)
        case .edit(let target, let targetSeq, let text):
            // Same author, applied in seq order: the latest edit is the last one applied. Only
            // the author's own earlier post (its seq and id) is touched, whatever the body says.
            guard targetSeq < op.seq else { return }
            try database.cachedStatement(
                """
                UPDATE messages SET text = ?, edited = 1
                WHERE oid = (SELECT oid FROM ops WHERE pid = ? AND aid = ? AND seq = ?) AND op_id = ? AND deleted = 0
                """
            ).run(.text(text), .integer(pid), .integer(aid), .integer(Int64(targetSeq)), .blob(target.bytes))
        case .delete(let target, let targetSeq, _):
            guard targetSeq < op.seq else { return }
            try markDeleted(target, seq: targetSeq, pid: pid, aid: aid)
        case .react(let target, let emoji, let on):
            try database.cachedStatement("INSERT OR REPLACE INTO reactions(pid, target, reactor, emoji, on_) VALUES (?, ?, ?, ?, ?)")
                .run(.integer(pid), .blob(target.bytes), .integer(aid), .text(emoji), .integer(on ? 1 : 0))
        case .profile(let subject, _, _, _, _, _):
            try resolveProfile(of: log.authorID(subject), pid: pid)
        case .deviceCertificate(let certificate):
            // Who is whose changed: the person's profile and every conversation's membership
            // (a device's membership ops count for its person) are settled again.
            if try devices.noteCertificate(certificate, op: op, oid: oid) {
                try resolveProfile(of: log.authorID(certificate.person), pid: pid)
                if !rebuilding { try rebuildConversationsAtEnd() }
            }
        case .deviceRevocation(let revocation):
            try devices.noteRevocation(revocation, op: op, oid: oid, aid: aid)
            try resolveProfile(of: log.authorID(revocation.person), pid: pid)
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
        case .keyGrant(let grant):
            if try keys.noteGrant(grant, oid: oid, record: record, aid: aid, rebuilding: rebuilding) { pendingRebuilds.insert(record.pid) }
        case .invite:
            break
        case .roomLink(let predecessor, let contentKey):
            try notePredecessor(predecessor, contentKey: contentKey, of: record)
        case .roomNotice:
            // Shown where it was written (the old epoch) as a line by whoever changed the passphrase.
            try database.cachedStatement("INSERT INTO messages(oid, pid, aid, seq, hlc, op_id, text) VALUES (?, ?, ?, ?, ?, ?, ?)").run(
                .integer(oid), .integer(pid), .integer(aid), .integer(Int64(op.seq)), .integer(Int64(bitPattern: op.hlc.raw)),
                .blob(op.id.bytes), .text(Self.passphraseChangedText))
        case .roomPolicy:
            try database.cachedStatement("INSERT INTO policy_events(oid, pid) VALUES (?, ?)").run(.integer(oid), .integer(pid))
            try resolveRoomPolicy(pid: pid)
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
        case .readMarker(let target, let position) where record.descriptor.kind == .conversation:
            // A read receipt: only for the conversation it is written in.
            guard target == record.id else { return }
            try database.cachedStatement(
                """
                INSERT INTO read_receipts(pid, aid, position) VALUES (?, ?, ?)
                ON CONFLICT(pid, aid) DO UPDATE SET position = max(position, excluded.position)
                """
            ).run(.integer(pid), .integer(aid), .integer(Int64(bitPattern: position.raw)))
        case .readMarker(let target, let position):
            try database.cachedStatement(
                """
                INSERT INTO read_markers(owner, target, position) VALUES (?, ?, ?)
                ON CONFLICT(owner, target) DO UPDATE SET position = max(position, excluded.position)
                """
            ).run(.blob(try devices.person(of: op.author).publicKey), .blob(target.bytes), .integer(Int64(bitPattern: position.raw)))
        case .chatMute(let target, let muted):
            // Last writer wins, by the op's place in (hlc, writer, seq): the same on every replica.
            try database.cachedStatement(
                """
                INSERT INTO mutes(owner, target, muted, hlc, writer, seq) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT(owner, target) DO UPDATE SET muted = excluded.muted, hlc = excluded.hlc, writer = excluded.writer, seq = excluded.seq
                WHERE (excluded.hlc, excluded.writer, excluded.seq) > (mutes.hlc, mutes.writer, mutes.seq)
                """
            ).run(
                .blob(try devices.person(of: op.author).publicKey), .blob(target.bytes), .integer(muted ? 1 : 0),
                .integer(Int64(bitPattern: op.hlc.raw)), .blob(op.author.publicKey), .integer(Int64(op.seq)))
        }
    }

    /// The text a passphrase change shows in the room's old epoch.
    public static let passphraseChangedText =
        "(changed this private room's passphrase: later messages are in a new epoch that the old passphrase cannot open)"

    /// A private room's link to the epoch it replaced: that epoch becomes readable here with the
    /// content key the link hands on (never writable: its room key stays with the old
    /// passphrase), under the same name, and the room's views follow the chain to it. Only a
    /// new row triggers a rebuild of the earlier epoch, so links that point at each other end.
    private func notePredecessor(_ roomKey: Bytes32, contentKey: Bytes32, of record: PartitionRecord) throws {
        let descriptor = PartitionDescriptor.privateRoom(roomKey: roomKey)
        guard descriptor.id != record.id,
            let name = try database.scalar("SELECT name FROM private_rooms WHERE pid = ?", .integer(record.pid), as: String.self)
        else { return }
        // No key handed on (no history for new joiners): only a node that holds the earlier
        // epoch already links it to this one; others do not learn of it.
        if contentKey == OperationBody.withheldKey {
            if let earlier = try log.partition(descriptor.id) {
                try database.cachedStatement("UPDATE private_rooms SET successor = ? WHERE pid = ?").run(.integer(record.pid), .integer(earlier.pid))
            }
            return
        }
        let earlier = try log.ensurePartition(descriptor, joined: true)
        let known: Int = try database.scalar("SELECT count(*) FROM private_rooms WHERE pid = ?", .integer(earlier.pid)) ?? 0
        try database.cachedStatement(
            """
            INSERT INTO private_rooms(pid, name, room_seed, content_key, successor) VALUES (?, ?, NULL, ?, ?)
            ON CONFLICT(pid) DO UPDATE SET successor = excluded.successor
            """
        ).run(.integer(earlier.pid), .text(name), .blob(contentKey.bytes), .integer(record.pid))
        if known == 0 {
            keys.forgetEpochKeys(pid: earlier.pid)
            pendingRebuilds.insert(earlier.pid)
        }
    }

    private func noteMembershipEvent(oid: Int64, record: PartitionRecord, rebuilding: Bool) throws {
        try database.cachedStatement("INSERT INTO membership_events(oid, pid) VALUES (?, ?)").run(.integer(oid), .integer(record.pid))
        if !rebuilding { try resolveMembership(record) }
    }

    /// Recomputes a conversation's members from all its membership ops (they are few). When
    /// the result changes outside a rebuild, the partition's views are rebuilt at the end of the
    /// transaction: which encrypted ops take effect depends on it.
    func resolveMembership(_ record: PartitionRecord, rebuilding: Bool = false) throws {
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
            events.append(Membership.Event(author: try devices.person(of: op.author), hlc: op.hlc, action: action, seq: op.seq))
        }
        let state = Membership.resolve(creator: try devices.person(of: creator), events: events)
        // Who may write when decides which encrypted ops take effect: a change rebuilds the views.
        let before = try keys.membershipState(pid: record.pid)
        if !rebuilding, before.current != state.current || before.removedAt != state.removedAt { pendingRebuilds.insert(record.pid) }
        keys.noteMembership(state, pid: record.pid)
        try database.cachedStatement("DELETE FROM members WHERE pid = ?").run(.integer(record.pid))
        let insert = try database.cachedStatement("INSERT INTO members(pid, user, current, removed_at) VALUES (?, ?, ?, ?)")
        for user in state.everMember.sorted() {
            try insert.run(
                .integer(record.pid), .blob(user.publicKey), .integer(state.current.contains(user) ? 1 : 0),
                state.removedAt[user].map { .integer(Int64(bitPattern: $0.raw)) } ?? .null)
        }
    }

    // MARK: Rebuilding

    /// Rebuilds every view from the op log. The result must equal the live views.
    public func rebuildViews() throws {
        try database.transaction(.immediate) {
            for table in Schema.viewTables { try database.execute("DELETE FROM \(table)") }
            keys.forgetCachedRows()
            for record in try log.partitions() { try replay(record) }
            try flushPendingRebuilds()
        }
    }

    /// Rebuilds the partitions for which a key arrived that opens ops already stored. Runs at the
    /// end of every transaction that applies ops, so a batch with many grants rebuilds once.
    func flushPendingRebuilds() throws {
        try flushRetention()
        while let pid = pendingRebuilds.first {
            pendingRebuilds.remove(pid)
            guard !isReadOnly, let descriptor = try log.descriptor(pid: pid), let record = try log.partition(descriptor.id) else { continue }
            try rebuildViews(record)
        }
    }

    /// Rebuilds one partition's views from its ops.
    func rebuildViews(_ record: PartitionRecord) throws {
        let pid = SQLValue.integer(record.pid)
        for table in [
            "messages", "attachment_hashes", "reactions", "conversations", "membership_events", "members", "tasks", "grants", "read_receipts",
            "policy_events", "room_policies",
        ] {
            try database.execute("DELETE FROM \(table) WHERE pid = ?", pid)
        }
        keys.forgetPartition(pid: record.pid)
        switch record.descriptor {
        case .directory:
            for table in ["profiles", "devices", "device_revocations"] { try database.execute("DELETE FROM \(table)") }
            devices.forgetCachedRows()
        case .ownData(let owner): try database.execute("DELETE FROM read_markers WHERE owner = ?", .blob(owner.publicKey))
        default: break
        }
        try replay(record)
    }

    /// Replays a partition's ops: membership ops and grants first, then the membership is
    /// resolved (so every key a stored grant gives and everyone's membership are known before
    /// any body is opened, as at the end of live application), then the rest in chain order per
    /// author (so edits follow their posts).
    private func replay(_ record: PartitionRecord) throws {
        let rows = try database.prepare("SELECT oid, aid, header, body, erasure FROM ops WHERE pid = ? ORDER BY aid, seq").rows(.integer(record.pid)) {
            ($0.int64(0), $0.int64(1), try OpLog.storedOperation($0, from: 2))
        }
        let isContent = { (op: Operation) in OperationType(rawValue: op.type)?.isConversationContent ?? true }
        func apply(_ row: (Int64, Int64, Operation)) throws {
            let (oid, aid, op) = row
            if let erasure = op.erasure {
                try applyViews(op, checked: .erased(erasure), oid: oid, record: record, aid: aid, rebuilding: true)
                return
            }
            if op.isExpired { return }
            guard case .success(let checked) = PartitionRules.check(op, in: record.descriptor) else {
                throw StoreError.damaged("stored op \(op.id) no longer passes its partition's rules")
            }
            try applyViews(op, checked: checked, oid: oid, record: record, aid: aid, rebuilding: true)
        }
        for row in rows where !isContent(row.2) { try apply(row) }
        try resolveMembership(record, rebuilding: true)
        for row in rows where isContent(row.2) { try apply(row) }
        if record.descriptor == .directory { try resolveAllProfiles(pid: record.pid) }
    }
}

extension Views {
    /// Lists a message's attachments by hash in `attachment_hashes` (the blob queries' index).
    func noteAttachments(_ attachments: [Attachment], pid: Int64, oid: Int64) throws {
        guard !attachments.isEmpty else { return }
        let insert = try database.cachedStatement("INSERT OR IGNORE INTO attachment_hashes(pid, hash, oid) VALUES (?, ?, ?)")
        for attachment in attachments { try insert.run(.integer(pid), .blob(attachment.hash.bytes), .integer(oid)) }
    }

    /// Fills `attachment_hashes` from the messages a store held before migration 005 made it
    /// (migration 009 runs it, once, in its transaction).
    func fillAttachmentHashes() throws {
        let rows = try database.cachedStatement("SELECT oid, pid, attachments FROM messages WHERE attachments IS NOT NULL")
            .rows { (oid: $0.int64(0), pid: $0.int64(1), encoded: $0.blob(2)) }
        for row in rows { try noteAttachments(decodeAttachments(row.encoded), pid: row.pid, oid: row.oid) }
    }

    /// The views of an erased op: a post is listed as deleted (its words are gone; the delete
    /// that erased it follows in the chain, and marks it the same way); an edit marks the post
    /// its proof deletes. A rebuild replays erased ops through here too, so both agree.
    func applyErasedViews(_ op: Operation, erasure: Erasure, oid: Int64, pid: Int64, aid: Int64) throws {
        if op.type == OperationType.post.rawValue {
            try database.cachedStatement(
                """
                INSERT INTO messages(oid, pid, aid, seq, hlc, op_id, text, deleted) VALUES (?, ?, ?, ?, ?, ?, '', 1)
                """
            ).run(.integer(oid), .integer(pid), .integer(aid), .integer(Int64(op.seq)), .integer(Int64(bitPattern: op.hlc.raw)), .blob(op.id.bytes))
        } else if case .delete(let target, let targetSeq, _)? = try? OperationBody(type: erasure.proof.type, decoding: erasure.proof.body) {
            try markDeleted(target, seq: targetSeq, pid: pid, aid: aid)
        }
    }

    /// Marks the author's post `target` (op `seq`) deleted in the messages view: its text,
    /// attachments, place and reply link cleared.
    func markDeleted(_ target: OpID, seq: UInt64, pid: Int64, aid: Int64) throws {
        try database.cachedStatement(
            """
            UPDATE messages SET text = '', attachments = NULL, latitude = NULL, longitude = NULL, reply_to = NULL, edited = 0, deleted = 1
            WHERE oid = (SELECT oid FROM ops WHERE pid = ? AND aid = ? AND seq = ?) AND op_id = ?
            """
        ).run(.integer(pid), .integer(aid), .integer(Int64(seq)), .blob(target.bytes))
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
