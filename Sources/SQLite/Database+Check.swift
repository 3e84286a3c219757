/// Checking a whole database file (issue 10, storage faults): normal commands notice damage
/// only on the pages they read, so a damaged file can look sound to most of them.
extension Database {
    /// SQLite's `PRAGMA quick_check`: reads every page of the file (and the WAL) and checks the
    /// B-trees' structure and that every index matches its table, but not the content of rows.
    /// Returns at most `limit` problems, in SQLite's words; none when the file is sound. A file
    /// too damaged to be read at all gives its error as the one problem.
    public func quickCheck(limit: Int = 10) -> [String] {
        do {
            let lines = try prepare("PRAGMA quick_check(\(max(1, limit)))").rows { $0.text(0) }
            return lines == ["ok"] ? [] : lines
        } catch {
            return ["\(error)"]
        }
    }
}
