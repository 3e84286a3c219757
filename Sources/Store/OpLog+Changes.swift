import Identity
import Replica
import SQLite

/// Noticing ops written by another process (a CLI command while a node runs, docs/DESIGN.md §5).
extension OpLog {
    /// The row id of the newest op, so a node can later ask what arrived after it.
    public func latestOpRowID() throws -> Int64 {
        try database.cachedStatement("SELECT max(oid) FROM ops").firstRow { $0.int64(0) } ?? 0
    }

    /// Starts watching which ops this connection stores: `firstOpRowIDSinceMark` is nil until
    /// the next op is stored, then that op's row id. A node marks before its own write, so it
    /// knows the write's first row without asking SQLite (a query that begins a read
    /// transaction, about 1% of a busy node's CPU).
    public func markOpInserts() {
        firstOpRowIDSinceMark = nil
        opsSinceMark = []
        opsSinceMarkAreExact = true
        dataVersionAtFirstOpSinceMark = nil
        lastOpRowIDSinceMark = nil
    }

    /// What one write stored, as this connection saw it (`takeOpsSinceMark()`).
    public struct MarkedWrite: Sendable {
        /// The ops, in row order.
        public let ops: [Operation]
        /// `dataVersion` as the write stored its first op, inside its transaction; nil when it
        /// stored none.
        public let dataVersion: Int64?
        /// The row id of the last op it stored (nil: none).
        public let lastRowID: Int64?
    }

    /// The ops this connection stored since `markOpInserts()`, if that list is exact: no
    /// rollback since the mark (which may have undone some of them), no partition added (which
    /// a node lists to its peers), and no other process's commit between the write's
    /// transactions (whose rows would lie among the write's). Nil otherwise: read them from the
    /// store, after `firstOpRowIDSinceMark`. Ends the watch either way.
    ///
    /// A node's own write hands its ops to the links from here rather than reading them back:
    /// five read transactions and the ops' decoding, about a tenth of an own write's
    /// instructions besides the signature.
    public func takeOpsSinceMark() -> MarkedWrite? {
        defer { opsSinceMark = nil }
        guard opsSinceMarkAreExact, let ops = opsSinceMark else { return nil }
        return MarkedWrite(ops: ops, dataVersion: dataVersionAtFirstOpSinceMark, lastRowID: lastOpRowIDSinceMark)
    }

    /// How many ops this connection stored since `markOpInserts()` (while watched and exact),
    /// without asking SQLite.
    public var opCountSinceMark: Int? {
        opsSinceMarkAreExact ? opsSinceMark?.count : nil
    }

    /// How many ops are stored after `rowID` (what one local write added, without reading them).
    public func opCount(afterRowID rowID: Int64) throws -> Int {
        try database.cachedStatement("SELECT count(*) FROM ops WHERE oid > ?").firstRow(.integer(rowID)) { $0.int(0) } ?? 0
    }

    /// Ops stored after `rowID` (by this or any other process), oldest first, at most `limit`.
    /// Returns the row id to pass next time.
    public func ops(afterRowID rowID: Int64, limit: Int = 1_000) throws -> (ops: [Operation], lastRowID: Int64) {
        var last = rowID
        let ops = try database.cachedStatement("SELECT oid, header, body, erasure FROM ops WHERE oid > ? ORDER BY oid LIMIT ?")
            .rows(.integer(rowID), .integer(Int64(limit))) { row -> Operation in
                last = row.int64(0)
                return try Self.storedOperation(row, from: 1)
            }
        return (ops, last)
    }
}
