import Identity
import Replica

/// Applying ops that are often held already (a live push that reaches a node from several peers).
extension ReplicaStore {
    /// Applies `ops` like `apply(_:nowMillis:)`, but when every one of them is already stored
    /// answers `.duplicate` for each after reads alone, without taking the write lock: a node in
    /// a mesh receives each new op from every peer that holds it, and a write transaction per
    /// copy would contend with the commands writing the same file. Inside a transaction the
    /// lock is held already, and `apply` finds a duplicate as cheaply as the reads would.
    public func applyUnlessHeld(_ ops: [Operation], nowMillis: UInt64, linkAuthor: UserID? = nil) throws -> [ApplyOutcome] {
        if database.isInTransaction { return try apply(ops, nowMillis: nowMillis, linkAuthor: linkAuthor) }
        // The body hash first, as `apply` checks it before looking for the op: a held header with
        // another body is refused there, not a duplicate.
        if try ops.allSatisfy({ try $0.hasValidBodyHash && log.contains($0) }) { return ops.map { _ in .duplicate } }
        return try apply(ops, nowMillis: nowMillis, linkAuthor: linkAuthor)
    }
}
