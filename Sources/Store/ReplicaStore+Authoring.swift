import Identity
import Replica
import SQLite
import Sodium
import Wire

/// Writing local ops: the node's own changes.
///
/// Every own write is durable when the call returns: its transaction syncs the WAL after the
/// commit (`Database.transaction(durable:)`), so a power loss right after a person was told the
/// message was sent (`parley send`, the chat, the web page and API, the control socket's
/// `author`: all come here) cannot drop it. If no peer holds it yet, nobody could send it back.
/// Ops applied from peers and other local bookkeeping stay at `synchronous = NORMAL`: a power
/// loss may drop their last commits, which the peers send again at the next sync. The sync
/// costs one `fdatasync` of the WAL per own transaction (`SECURITY.md`, limits).
extension ReplicaStore {
    /// Builds, signs and applies a new op by `identity` in `partition`, in one durable
    /// transaction with its head, its view changes and the clock. Throws `StoreError.invalidInput` for bad fields,
    /// `.notMember` for a write into a conversation `identity` is not a current member of, and
    /// `.rejected` when the op would break a rule, writing nothing in any case.
    ///
    /// In a conversation the store does what the protocol asks of a member (docs/DESIGN.md §3.5):
    /// content bodies are encrypted with the epoch key, after any rotation or share the key
    /// plan calls for (`EpochPlan`); a create keeps its name out of the plaintext (it follows as
    /// an encrypted rename), grants epoch 0 and invites the members; an add shares the key and
    /// invites the new member; a remove rotates to a new epoch. Returns the op that carries
    /// `body` (the create, the add...); the others are written in the same transaction. In an
    /// inbox, an `.invite` is sealed to the inbox's owner.
    @discardableResult
    public func author(_ body: OperationBody, in partition: PartitionID, by identity: Identity, nowMillis: UInt64) throws -> Operation {
        if let problem = body.validate() { throw StoreError.invalidInput(problem) }
        try useIdentity(identity)
        let body = try resolvingTargetSeq(body, in: partition, author: identity.id)
        return try database.transaction(.immediate, durable: true) {
            guard let record = try log.partition(partition) else { throw StoreError.unknownPartition(partition) }
            guard let local = keys.localIdentity(identity.id) else { throw StoreError.damaged("identity not registered") }
            let op: Operation
            switch (record.descriptor, body) {
            case (.conversation, _):
                op = try authorInConversation(body, record: record, by: local, nowMillis: nowMillis)
            case (.privateRoom, _):
                op = try authorInPrivateRoom(body, record: record, by: identity, nowMillis: nowMillis)
            case (.inbox(let owner), .invite(let conversation)):
                op = try signAndApply(
                    .invite, flags: .bodyEncrypted, body: try Invite.seal(conversation, to: owner), record: record, by: identity, nowMillis: nowMillis)
            default:
                op = try signAndApply(body.type, flags: [], body: body.encoded, record: record, by: identity, nowMillis: nowMillis)
            }
            try views.flushPendingRebuilds()
            return op
        }
    }

    /// Signs the next op of `identity` in the partition and applies it; throws (and writes
    /// nothing of it) unless it applies. Must run inside a transaction.
    @discardableResult
    func signAndApply(
        _ type: OperationType, flags: Operation.Flags, body: [UInt8], record: PartitionRecord, by identity: Identity, nowMillis: UInt64,
        roomKeys: PrivateRoomKeys? = nil
    ) throws -> Operation {
        let bodyBytes = body.count + (roomKeys == nil ? 0 : RoomSignature.bytes)
        guard bodyBytes <= Operation.maxBodyBytes else {
            throw StoreError.invalidInput("the change is \(bodyBytes) bytes, over the limit of \(Operation.maxBodyBytes)")
        }
        let aid = try log.authorID(identity.id)
        let head = try log.head(pid: record.pid, aid: aid)
        if let frozen = head.frozenAt { throw StoreError.rejected(.authorForked(at: frozen)) }
        var clock = self.clock
        let hlc = clock.tick(nowMillis: nowMillis)
        // In a private room the body starts with the room key's signature over the op's place.
        let signedBody =
            roomKeys.map {
                RoomSignature.body(sealed: body, keys: $0, author: identity.id, seq: head.maxSeq + 1, prev: head.headID, hlc: hlc, type: type, flags: flags)
            } ?? body
        let op = Operation.sign(
            type: type, flags: flags, partition: record.id, seq: head.maxSeq + 1, prev: head.headID, hlc: hlc, body: signedBody, by: identity)
        // The head read above, in this transaction: not read again.
        switch try applyChecked(op, signature: .checked, nowMillis: nowMillis, knownHead: head) {
        case .applied:
            self.clock = clock
            return op
        case .rejected(let reason):
            throw StoreError.rejected(reason)
        case let other:
            throw StoreError.damaged("a local op was not applied: \(other)")
        }
    }

    /// Fills in the seq of an edit's or delete's target (the author's own post) when the caller
    /// left it at 0, and a room delete's `erasing`: the author's edits of the post, which every
    /// replica then erases with it. An unknown target is left at 0 and refused by the rules. A
    /// deleted message is not edited: the edit's words would be stored again, and no delete
    /// would erase them.
    private func resolvingTargetSeq(_ body: OperationBody, in partition: PartitionID, author: UserID) throws -> OperationBody {
        let target: OpID
        let givenSeq: UInt64
        switch body {
        case .edit(let id, let seq, _): (target, givenSeq) = (id, seq)
        case .delete(let id, let seq, []): (target, givenSeq) = (id, seq)
        default: return body
        }
        guard let record = try log.partition(partition), let aid = try log.existingAuthorID(author) else { return body }
        // Through the author's own chain, newest first: an edit of a recent post reads a few rows,
        // where the room's messages (all authors') were read to the end, on the node's thread.
        let found =
            try database.cachedStatement(
                """
                SELECT m.seq, m.deleted FROM ops o CROSS JOIN messages m ON m.oid = o.oid WHERE o.pid = ? AND o.aid = ? AND m.op_id = ?
                    AND (? = 0 OR o.seq = ?) ORDER BY o.seq DESC LIMIT 1
                """
            ).firstRow(.integer(record.pid), .integer(aid), .blob(target.bytes), .integer(Int64(givenSeq)), .integer(Int64(givenSeq))) {
                (seq: UInt64($0.int64(0)), deleted: $0.int(1) != 0)
            }
        let seq = givenSeq == 0 ? found?.seq ?? 0 : givenSeq
        switch body {
        case .edit(_, _, let text):
            if found?.deleted == true { throw StoreError.invalidInput("message \(target.text.prefix(12)) was deleted; a deleted message cannot be edited") }
            return .edit(target: target, targetSeq: seq, text: text)
        default:
            let erasing = record.descriptor.kind == .room && seq > 0 ? try log.editsToErase(of: target, targetSeq: seq, pid: record.pid, aid: aid) : []
            return .delete(target: target, targetSeq: seq, erasing: erasing)
        }
    }

    /// Writes a setting (local only, never replicated).
    public func setSetting(_ key: String, _ value: SQLValue) throws {
        try database.execute("INSERT OR REPLACE INTO settings(key, value) VALUES (?, ?)", .text(key), value)
    }

    /// Reads a setting.
    public func setting(_ key: String) throws -> SQLValue? {
        try database.prepare("SELECT value FROM settings WHERE key = ?").rows(.text(key)) { $0.value(0) }.first
    }
}
