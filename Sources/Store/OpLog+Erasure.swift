import Identity
import Replica
import SQLite

/// A delete erases the words (docs/ARCHITECTURE.md, *A delete erases the words*): when a room's
/// delete applies, on every replica, the deleted post's body and the bodies of the author's
/// edits of it leave `ops.body` in the same transaction, each row keeping its signed header and
/// the delete as its proof (`ops.erasure`), so chains, ids, digests and signatures still verify.
/// Freed content is zeroed (`secure_delete`) and the WAL is emptied after the commit.
extension OpLog {
    /// Erased op ids remembered by `erasedHere`.
    static let maxRememberedErasures = 4_096

    /// An op from its stored columns.
    static func storedOperation(header: [UInt8], body: [UInt8], erasure: [UInt8]?) throws -> Operation {
        guard let erasure else { return try Operation(header: header, body: body) }
        // An empty `erasure`: the op expired outside its room's retention (`Views+Retention`).
        if erasure.isEmpty { return try Operation(expiredHeader: header) }
        return try Operation(erasedHeader: header, proof: Operation(encoded: erasure))
    }

    /// Ops whose bodies expired in this write: like erased ones, they leave in their stored form
    /// (`erasedForms`) if they reach the links from memory.
    func noteExpired(_ ids: [OpID]) {
        if erasedHere.count + ids.count > Self.maxRememberedErasures { erasedHere.removeAll(keepingCapacity: true) }
        erasedHere.formUnion(ids.prefix(Self.maxRememberedErasures))
    }

    /// An op from a row's `header, body, erasure` columns, starting at column `first`.
    static func storedOperation(_ row: Statement, from first: Int32) throws -> Operation {
        try storedOperation(header: row.blob(first), body: row.blob(first + 1), erasure: row.isNull(first + 2) ? nil : row.blob(first + 2))
    }

    /// Erases what the delete `op` (just stored at its place) names: the post `target` at
    /// `targetSeq` and the edits at `erasing`, all the author's (the rules checked that). Only on a
    /// delete whose own signature this node verified: its bytes become the proof that peers and
    /// imports check, and a proof that fails there would be this node's fault. A delete held
    /// on its chain's word is verified here, once (deletes are few).
    func erase(
        deletedBy op: Operation, target: OpID, targetSeq: UInt64, erasing: [UInt64], pid: Int64, aid: Int64, signatureChecked: Bool
    ) throws {
        if !signatureChecked {
            guard op.hasValidSignature else { return }
            noteSignatureChecked(op)
        }
        let proof = SQLValue.blob(op.header + op.body)
        let update = try database.cachedStatement(
            "UPDATE ops SET body = X'', erasure = ? WHERE pid = ? AND aid = ? AND seq = ? AND type = ? AND erasure IS NULL RETURNING header")
        var erased: [OpID] = []
        for (seq, type) in [(targetSeq, OperationType.post)] + erasing.map({ ($0, OperationType.edit) }) {
            let header = try update.firstRow(proof, .integer(pid), .integer(aid), .integer(Int64(seq)), .integer(Int64(type.rawValue))) { $0.blob(0) }
            if let header { erased.append(SignedOpKey(storedHeader: header).id) }
        }
        guard !erased.isEmpty else { return }
        if erasedHere.count + erased.count > Self.maxRememberedErasures { erasedHere.removeAll(keepingCapacity: true) }
        erasedHere.formUnion(erased)
        database.truncateWALAfterCommit()
    }

    /// Whether `erasing` (a delete's list) names only the author's edits of `target`, below
    /// `before`: each must be an edit in the author's chain whose body, when held, edits `target`.
    /// An edit held erased already stood on a proof of the author's, so it is taken as named.
    func namesOwnEdits(_ erasing: [UInt64], of target: OpID, before: UInt64, author: UserID, pid: Int64) throws -> Bool {
        guard !erasing.isEmpty else { return true }
        guard let aid = try existingAuthorID(author) else { return false }
        for seq in erasing {
            guard seq < before, let stored = try storedOp(pid: pid, aid: aid, seq: seq), stored.type == OperationType.edit.rawValue else { return false }
            guard stored.erasure == nil else { continue }
            guard case .edit(let edited, _, _)? = try? OperationBody(type: stored.type, decoding: stored.body), edited == target else { return false }
        }
        return true
    }

    /// The author's edits of their post `target` (op `targetSeq`), oldest first, at most
    /// `Operation.maxErasedEdits` (a delete names them to erase them). Reads the author's edits
    /// after the post along their own chain.
    func editsToErase(of target: OpID, targetSeq: UInt64, pid: Int64, aid: Int64) throws -> [UInt64] {
        var seqs: [UInt64] = []
        try database.cachedStatement("SELECT seq, body FROM ops WHERE pid = ? AND aid = ? AND seq > ? AND type = ? AND erasure IS NULL ORDER BY seq")
            .forEachRow([.integer(pid), .integer(aid), .integer(Int64(targetSeq)), .integer(Int64(OperationType.edit.rawValue))]) { row in
                guard seqs.count < Operation.maxErasedEdits,
                    case .edit(let edited, _, _)? = try? OperationBody(type: OperationType.edit.rawValue, decoding: row.blob(1)), edited == target
                else { return }
                seqs.append(UInt64(row.int64(0)))
            }
        return seqs
    }

    /// `ops` with each op this process erased replaced by its stored, erased form: an op applied
    /// and erased in one write may reach the links whole from memory.
    func erasedForms(of ops: [Operation]) throws -> [Operation] {
        guard !erasedHere.isEmpty, ops.contains(where: { !$0.isErased && !$0.isExpired && erasedHere.contains($0.id) }) else { return ops }
        return try ops.map { op in
            guard !op.isErased, !op.isExpired, erasedHere.contains(op.id), let record = try partition(op.partition), let aid = try existingAuthorID(op.author),
                let stored = try storedOp(pid: record.pid, aid: aid, seq: op.seq), stored.id == op.id
            else { return op }
            return try stored.operation()
        }
    }

    /// Erases the bodies of the room posts deleted before migration 008, with the edits of them
    /// it can name (migration 009 runs it, once, in its transaction). The proof of each is the
    /// delete that is stored; a delete of that version names no edits, so edits of posts
    /// deleted then keep their bodies (SECURITY.md, *Known gaps*).
    func eraseDeletedBodies() throws {
        let deletes = try database.prepare(
            """
            SELECT o.pid, o.aid, o.header, o.body, o.signature_checked FROM ops o JOIN partitions p ON p.pid = o.pid
            WHERE o.type = ? AND p.kind = ? AND o.erasure IS NULL
            """
        ).rows(.integer(Int64(OperationType.delete.rawValue)), .integer(Int64(PartitionKind.room.rawValue))) { row in
            (pid: row.int64(0), aid: row.int64(1), op: try Operation(header: row.blob(2), body: row.blob(3)), checked: row.int(4) != 0)
        }
        for delete in deletes {
            guard case .delete(let target, let targetSeq, let erasing)? = try? OperationBody(type: delete.op.type, decoding: delete.op.body),
                try isOwnPost(target, seq: targetSeq, before: delete.op.seq, author: delete.op.author, pid: delete.pid)
            else { continue }
            try erase(
                deletedBy: delete.op, target: target, targetSeq: targetSeq, erasing: erasing, pid: delete.pid, aid: delete.aid,
                signatureChecked: delete.checked)
        }
    }
}
