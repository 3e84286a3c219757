import CSQLite

/// A database file opened to read its bytes as they are on disk, through SQLite's default VFS
/// rather than with `open(2)`, so that this process keeps its locks on the file.
///
/// POSIX advisory locks belong to the process, and closing any descriptor of a file releases
/// all of them (https://sqlite.org/howtocorrupt.html, §2.2). A connection in WAL mode holds a
/// SHARED lock on its database file for as long as it is open; were a raw `close` to drop it,
/// a connection of another process that closes next would take the EXCLUSIVE lock, believe it
/// is the last, checkpoint, and delete the `-wal` and `-shm` files under ours. SQLite's unix
/// VFS keeps the descriptors it opens per file (device and inode), and one closed while the
/// process holds a lock on the file stays open until the last lock goes (`unixClose`); its
/// next open of the file takes that descriptor back, so repeated reads leave at most one
/// behind. Every connection here reaches its file through that VFS (the cipher VFS and the
/// tests' layers wrap it), so a read through it is as safe as a second connection.
final class DatabaseFileReader {
    private let file: UnsafeMutablePointer<sqlite3_file>
    /// The name the file is open under: the VFS keeps a pointer to it until the file closes.
    private let name: sqlite3_filename

    /// Opens the file at `path` read-only; nil when there is none or it cannot be opened.
    init?(path: String) {
        _ = Database.processSettings
        guard let vfs = sqlite3_vfs_find(nil), let open = vfs.pointee.xOpen, let fullPathname = vfs.pointee.xFullPathname else { return nil }
        var full = [CChar](repeating: 0, count: Int(vfs.pointee.mxPathname) + 1)
        guard fullPathname(vfs, path, Int32(full.count), &full) == SQLITE_OK else { return nil }
        let fullPath = String(decoding: full.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // A main database's name carries its journal's and WAL's after it (`sqlite3_filename`).
        guard let name = sqlite3_create_filename(fullPath, fullPath + "-journal", fullPath + "-wal", 0, nil) else { return nil }
        let memory = UnsafeMutableRawPointer.allocate(byteCount: Int(vfs.pointee.szOsFile), alignment: 16)
        memory.initializeMemory(as: UInt8.self, repeating: 0, count: Int(vfs.pointee.szOsFile))
        let file = memory.bindMemory(to: sqlite3_file.self, capacity: 1)
        var openedFlags: Int32 = 0
        guard open(vfs, name, file, SQLITE_OPEN_READONLY | SQLITE_OPEN_MAIN_DB, &openedFlags) == SQLITE_OK, file.pointee.pMethods != nil else {
            memory.deallocate()
            sqlite3_free_filename(name)
            return nil
        }
        self.file = file
        self.name = name
    }

    deinit {
        _ = file.pointee.pMethods.pointee.xClose?(file)
        file.deallocate()
        sqlite3_free_filename(name)
    }

    /// The file's length in bytes; nil when it cannot be told.
    var size: Int64? {
        var size: sqlite3_int64 = 0
        guard file.pointee.pMethods.pointee.xFileSize?(file, &size) == SQLITE_OK else { return nil }
        return size
    }

    /// `count` bytes from `offset`; nil unless all of them could be read.
    func read(_ count: Int, at offset: Int64) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        let resultCode = bytes.withUnsafeMutableBytes { file.pointee.pMethods.pointee.xRead?(file, $0.baseAddress, Int32(count), offset) }
        return resultCode == SQLITE_OK ? bytes : nil
    }
}
