import Identity
import Replica
import SQLite
import Sodium
import Wire

import class Foundation.ProcessInfo
import class Foundation.Thread

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

    /// Authors `bodies` in order in one transaction (group commit): all of them, or none when
    /// one fails. Committing together shares the B-tree pages each write touches, which is most
    /// of a single post's cost. Returns the ops in order.
    ///
    /// A long batch of plain bodies (a room, the directory: nothing to encrypt, no edit target
    /// to look up) is signed on a second thread while this one stores the ops signed before:
    /// Ed25519 signing is about two thirds of a post's instructions, and an
    /// op's `prev` is the id of the op before, so the signer runs ahead along the chain.
    @discardableResult
    public func author(_ bodies: [OperationBody], in partition: PartitionID, by identity: Identity, nowMillis: UInt64) throws -> [Operation] {
        try database.transaction(.immediate, durable: true) {
            guard bodies.count >= Self.pipelinedSigningMinimum, let record = try log.partition(partition),
                let encoded = Self.signableAhead(bodies, in: record.descriptor)
            else {
                return try bodies.map { try author($0, in: partition, by: identity, nowMillis: nowMillis) }
            }
            return try authorSigningAhead(encoded, record: record, by: identity, nowMillis: nowMillis)
        }
    }

    /// Batches shorter than this are signed inline: starting a thread costs more than it saves.
    static let pipelinedSigningMinimum = 32

    /// The threads that sign a long batch: one per core, at most four (the thread that applies
    /// mostly waits for them).
    static let signerThreads = min(max(ProcessInfo.processInfo.activeProcessorCount, 1), 4)

    /// The bodies' types and encodings if every one can be signed without reading the store
    /// between ops (valid, within the size limit, nothing to encrypt or look up); nil if not.
    static func signableAhead(_ bodies: [OperationBody], in descriptor: PartitionDescriptor) -> [(type: OperationType, body: [UInt8])]? {
        switch descriptor {
        case .conversation, .inbox: return nil
        default: break
        }
        var encoded: [(type: OperationType, body: [UInt8])] = []
        encoded.reserveCapacity(bodies.count)
        for body in bodies {
            switch body {
            case .edit(_, 0, _), .delete, .invite: return nil
            default: break
            }
            guard body.validate() == nil else { return nil }
            let bytes = body.encoded
            guard bytes.count <= Operation.maxBodyBytes else { return nil }
            encoded.append((body.type, bytes))
        }
        return encoded
    }

    /// `author(_:in:by:nowMillis:)` for a batch `signableAhead` accepted: the ops' seqs, prevs and
    /// clock readings follow from the head alone (an op id leaves the signature out), so the
    /// chain is built here first and signed by `signerThreads` threads at once, while this
    /// thread applies each op in chain order as it comes. Signing is most of a post's CPU, so
    /// the batch goes about as fast as the cores sign. Must run inside the transaction; an op
    /// that does not apply stops the signers and throws (the caller's transaction rolls
    /// everything back).
    private func authorSigningAhead(
        _ bodies: [(type: OperationType, body: [UInt8])], record: PartitionRecord, by identity: Identity, nowMillis: UInt64
    ) throws -> [Operation] {
        try useIdentity(identity)
        let head = try log.head(pid: record.pid, aid: try log.authorID(identity.id))
        if let frozen = head.frozenAt { throw StoreError.rejected(.authorForked(at: frozen)) }
        var clock = self.clock
        var prev = head.headID
        let chain = bodies.enumerated().map { index, body in
            let unsigned = Operation.Unsigned(
                type: body.type, partition: record.id, seq: head.maxSeq + 1 + UInt64(index), prev: prev,
                hlc: clock.tick(nowMillis: nowMillis), body: body.body, author: identity.id)
            prev = unsigned.id
            return unsigned
        }
        let threads = Self.signerThreads
        let signer = ChainSigner(count: chain.count, signers: threads)
        for first in 0..<threads {
            Thread {
                for index in stride(from: first, to: chain.count, by: threads) {
                    guard !signer.isCancelled else { break }
                    signer.deliver(chain[index].signed(by: identity), at: index)
                }
                signer.finish()
            }.start()
        }
        defer {
            signer.cancel()
            signer.waitUntilFinished()
        }
        var ops: [Operation] = []
        ops.reserveCapacity(bodies.count)
        while ops.count < bodies.count {
            for op in signer.take(from: ops.count) {
                switch try applyChecked(op, signature: .checked, nowMillis: nowMillis) {
                case .applied: ops.append(op)
                case .rejected(let reason): throw StoreError.rejected(reason)
                case let other: throw StoreError.damaged("a local op was not applied: \(other)")
                }
            }
        }
        self.clock = clock
        try views.flushPendingRebuilds()
        return ops
    }

    /// Signs the next op of `identity` in the partition and applies it; throws (and writes
    /// nothing of it) unless it applies. Must run inside a transaction.
    @discardableResult
    func signAndApply(
        _ type: OperationType, flags: Operation.Flags, body: [UInt8], record: PartitionRecord, by identity: Identity, nowMillis: UInt64
    ) throws -> Operation {
        guard body.count <= Operation.maxBodyBytes else {
            throw StoreError.invalidInput("the change is \(body.count) bytes, over the limit of \(Operation.maxBodyBytes)")
        }
        let aid = try log.authorID(identity.id)
        let head = try log.head(pid: record.pid, aid: aid)
        if let frozen = head.frozenAt { throw StoreError.rejected(.authorForked(at: frozen)) }
        var clock = self.clock
        let hlc = clock.tick(nowMillis: nowMillis)
        let op = Operation.sign(
            type: type, flags: flags, partition: record.id, seq: head.maxSeq + 1, prev: head.headID, hlc: hlc, body: body, by: identity)
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
