import Identity
import Replica
import SQLite
import Sodium
import Wire

/// Writing local ops: the node's own changes.
extension ReplicaStore {
    /// Builds, signs and applies a new op by `identity` in `partition`, in one transaction with
    /// its head, its view changes and the clock. Throws `StoreError.invalidInput` for bad fields and
    /// `.rejected` when the op would break a rule, writing nothing in either case.
    @discardableResult
    public func author(_ body: OperationBody, in partition: PartitionID, by identity: Identity, nowMillis: UInt64) throws -> Operation {
        if let problem = body.validate() { throw StoreError.invalidInput(problem) }
        let body = try resolvingTargetSeq(body, in: partition, author: identity.id)
        let bodyBytes = body.encoded
        guard bodyBytes.count <= Operation.maxBodyBytes else {
            throw StoreError.invalidInput("the change is \(bodyBytes.count) bytes, over the limit of \(Operation.maxBodyBytes)")
        }
        return try database.transaction(.immediate) {
            guard let record = try self.partition(partition) else { throw StoreError.unknownPartition(partition) }
            let aid = try authorID(identity.id)
            let head = try self.head(pid: record.pid, aid: aid)
            if let frozen = head.frozenAt { throw StoreError.rejected(.authorForked(at: frozen)) }
            var clock = self.clock
            let hlc = clock.tick(nowMillis: nowMillis)
            let op = Operation.sign(
                type: body.type, partition: partition, seq: head.maxSeq + 1, prev: head.headID, hlc: hlc,
                body: bodyBytes, by: identity)
            switch try applyChecked(op, signatureVerified: true, nowMillis: nowMillis) {
            case .applied:
                self.clock = clock
                try database.cachedStatement("INSERT OR REPLACE INTO settings(key, value) VALUES ('hlc', ?)")
                    .run(.integer(Int64(bitPattern: hlc.raw)))
                return op
            case .rejected(let reason):
                throw StoreError.rejected(reason)
            case let other:
                throw StoreError.damaged("a local op was not applied: \(other)")
            }
        }
    }

    /// Fills in the seq of an edit's or delete's target (the author's own post) when the caller
    /// left it at 0. An unknown target is left at 0 and refused by the rules.
    private func resolvingTargetSeq(_ body: OperationBody, in partition: PartitionID, author: UserID) throws -> OperationBody {
        let target: OpID
        switch body {
        case .edit(let id, 0, _), .delete(let id, 0): target = id
        default: return body
        }
        guard let record = try self.partition(partition), let aid = try existingAuthorID(author) else { return body }
        let seq =
            try database.cachedStatement("SELECT seq FROM messages WHERE pid = ? AND aid = ? AND op_id = ?")
            .rows(.integer(record.pid), .integer(aid), .blob(target.bytes)) { UInt64($0.int64(0)) }.first ?? 0
        switch body {
        case .edit(_, _, let text): return .edit(target: target, targetSeq: seq, text: text)
        default: return .delete(target: target, targetSeq: seq)
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
