import CSQLite

/// Reading what is still readable from a damaged database (issue 39, `parley salvage`): a query
/// that meets a damaged page fails as a whole, so a table is read here row by row in rowid
/// order, and the rows on (or behind) damaged pages are stepped over.
extension Database {
    /// What `salvageRows` read and what it had to step over.
    public struct SalvageScan: Equatable, Sendable {
        /// Rows handed to the caller.
        public var rowsRead = 0
        /// Runs of rowids that could not be read: they lie on damaged pages, or behind a damaged
        /// page of the table's tree. A run may include rowids that never held a row.
        public var unreadable: [ClosedRange<Int64>] = []
        /// False when the scan stopped at `maxProbes` before the table's end.
        public var complete = true
    }

    /// Failed seeks a scan may make in all before it gives up on the rest of the table: each
    /// costs a read of the damaged page (microseconds), so this bounds a scan of a file whose
    /// damage hides its end to a few seconds.
    public static let maxSalvageProbes = 1_000_000

    /// Hands every readable row of `table` (in rowid order) to `body`, with its rowid; `columns`
    /// are the statement's columns 1… (column 0 is the rowid).
    ///
    /// After a row fails to read, seeks the next rowids one by one until a seek succeeds (past
    /// the damaged page), up to the table's largest rowid (when that can still be read) and at
    /// most `maxProbes` failed seeks in all. Errors that mean damage (`SQLITE_CORRUPT`,
    /// `SQLITE_NOTADB`, I/O errors, a malformed record) are stepped over; others (busy, out of
    /// memory) and errors of `body` are thrown. `table` and `columns` are SQL names, not input.
    public func salvageRows(
        of table: String, columns: [String], maxProbes: Int = Database.maxSalvageProbes, _ body: (_ rowid: Int64, _ row: Statement) throws -> Void
    ) throws -> SalvageScan {
        let select = try prepare("SELECT rowid, \(columns.joined(separator: ", ")) FROM \(table) WHERE rowid >= ? ORDER BY rowid")
        let seek = try prepare("SELECT rowid FROM \(table) WHERE rowid >= ? ORDER BY rowid LIMIT 1")
        // The ends of the tree, where they can still be read: the scan starts at the smallest
        // rowid (1 when that cannot be read: the store's tables number their rows from 1) and
        // probes no further than the largest.
        func end(_ function: String) throws -> Int64? {
            do {
                return try prepare("SELECT \(function)(rowid) FROM \(table)").firstRow { $0.isNull(0) ? nil : $0.int64(0) } ?? nil
            } catch let error as SQLiteError where Self.meansDamage(error) {
                return nil
            }
        }
        let last = try end("max")
        var scan = SalvageScan()
        var next = try end("min") ?? 1
        var probes = 0
        while true {
            do {
                try select.forEachRow([.integer(next)]) { row in
                    let rowid = row.int64(0)
                    next = rowid == .max ? rowid : rowid + 1
                    scan.rowsRead += 1
                    try body(rowid, row)
                }
                return scan
            } catch let error as SQLiteError where Self.meansDamage(error) {
                select.reset()
            }
            // `next` could not be read: find the first rowid past it whose seek succeeds.
            let failed = next
            var probe = failed
            var found: Int64?
            var reachedEnd = false
            while probe < .max {
                probe += 1
                if let last, probe > last {
                    reachedEnd = true
                    break
                }
                guard probes < maxProbes else { break }
                do {
                    guard let rowid = try seek.firstRow(.integer(probe), map: { $0.int64(0) }) else {
                        reachedEnd = true
                        break
                    }
                    found = rowid
                    break
                } catch let error as SQLiteError where Self.meansDamage(error) {
                    seek.reset()
                    probes += 1
                }
            }
            guard let found else {
                scan.unreadable.append(failed...(reachedEnd ? (last ?? probe) : probe))
                scan.complete = reachedEnd
                return scan
            }
            scan.unreadable.append(failed...(found - 1))
            next = found
        }
    }

    /// Whether an error is the file's damage (step over it), not a condition of the moment.
    static func meansDamage(_ error: SQLiteError) -> Bool {
        [SQLITE_CORRUPT, SQLITE_NOTADB, SQLITE_IOERR, SQLITE_FORMAT, SQLITE_RANGE, SQLITE_TOOBIG, SQLITE_MISMATCH, SQLITE_ERROR].contains(error.code)
    }
}
