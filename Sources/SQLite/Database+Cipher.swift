import CSQLite
import CStoreCipher
import Glibc

/// Page-level encryption of a database file (`CStoreCipher`, docs/DESIGN.md §5.1): a file
/// opened with a `cipherKey` is read and written through a VFS that encrypts every page of the
/// file and of its WAL, so nothing in either file is readable without the key but SQLite's
/// 100-byte header (sizes and counters).
extension Database {
    /// The bytes at the end of each page that hold its nonce and tag.
    public static let cipherReservedBytes = Int(PARLEY_CIPHER_RESERVED_BYTES)
    /// The length of a key.
    public static let cipherKeyBytes = Int(PARLEY_CIPHER_KEY_BYTES)

    /// What is at a path, told from SQLite's header without opening it.
    public enum FileFormat: Equatable, Sendable {
        /// No file, or an empty one (a store not yet written).
        case empty
        /// An SQLite database in clear (the format of stores before encryption).
        case plain
        /// An SQLite database whose pages are encrypted (`cipherReservedBytes` reserved a page).
        case encrypted
        /// Something else.
        case other
    }

    /// The format of the file at `path`, from its first 100 bytes as they are on disk.
    ///
    /// Safe to call while this process has the file open (a second connection, the CLI while
    /// its store is open): the header is read through SQLite's VFS (`DatabaseFileReader`),
    /// never with a descriptor whose `close` would release the connections' locks. A file
    /// that a connection opened but nothing has written yet (a read-only open of an empty
    /// file) is `.empty`, as it was before that open: a read-write open writes the header
    /// (WAL mode is set in it) before it returns, so its file is never seen empty.
    public static func fileFormat(at path: String) -> FileFormat {
        guard let file = DatabaseFileReader(path: path) else { return .empty }
        guard let size = file.size else { return .other }
        if size == 0 { return .empty }
        guard let header = file.read(100, at: 0), header.starts(with: Array("SQLite format 3\0".utf8)) else { return .other }
        return Int(header[20]) == cipherReservedBytes ? .encrypted : .plain
    }

    /// The name of the VFS that encrypts with `key` through `base` (nil: the default VFS).
    static func cipherVFS(key: [UInt8], over base: String?) throws -> String {
        guard key.count == cipherKeyBytes else {
            throw SQLiteError.misuse("a store key is \(cipherKeyBytes) bytes, not \(key.count)")
        }
        var name = [CChar](repeating: 0, count: 64)
        let resultCode = key.withUnsafeBufferPointer { k in
            if let base {
                parley_cipher_vfs(k.baseAddress, base, &name, Int32(name.count))
            } else {
                parley_cipher_vfs(k.baseAddress, nil, &name, Int32(name.count))
            }
        }
        guard resultCode == SQLITE_OK else {
            throw SQLiteError(extendedCode: resultCode, message: "cannot set up the store's encryption (VFS \(base ?? "default"))")
        }
        return String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Asks SQLite to leave the reserved bytes each page needs for its nonce and tag: takes
    /// effect on a new (empty) file, and on the next `VACUUM` of an existing one.
    static func reserveCipherBytes(_ connection: OpaquePointer) {
        var reserved = Int32(cipherReservedBytes)
        _ = sqlite3_file_control(connection, "main", SQLITE_FCNTL_RESERVE_BYTES, &reserved)
    }

    /// Every page of the encrypted database file at `path` and of the frames of its WAL
    /// (`path-wal`, when there is one), decrypted with `key`, free pages included; pages that do
    /// not verify are left out. What tests look through for words a delete or a room's retention
    /// must have erased.
    public static func decryptedPages(of path: String, key: [UInt8]) throws -> [UInt8] {
        try decryptedDatabasePages(of: path, key: key) + decryptedWALPages(of: path + "-wal", key: key)
    }

    /// The page content of every frame of the WAL at `path` that verifies (none without a WAL).
    /// A descriptor of its own is safe here: SQLite locks the database file and the `-shm`,
    /// never the WAL.
    static func decryptedWALPages(of path: String, key: [UInt8]) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { _ = Glibc.close(fd) }
        var header = [UInt8](repeating: 0, count: 32)
        guard header.withUnsafeMutableBytes({ pread(fd, $0.baseAddress, 32, 0) }) == 32 else { return [] }
        let pageSize = Int(header[8]) << 24 | Int(header[9]) << 16 | Int(header[10]) << 8 | Int(header[11])
        guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0 else { return [] }
        var all: [UInt8] = []
        var page = [UInt8](repeating: 0, count: pageSize)
        var offset = 32 + 24
        while page.withUnsafeMutableBytes({ pread(fd, $0.baseAddress, pageSize, off_t(offset)) }) == pageSize {
            let opened = key.withUnsafeBufferPointer { k in
                page.withUnsafeMutableBufferPointer { parley_cipher_open_wal_page(k.baseAddress, Int64(offset), $0.baseAddress, Int32(pageSize)) }
            }
            if opened == 0 { all += page }
            offset += pageSize + 24
        }
        return all
    }

    /// The database file is read through SQLite's VFS (`DatabaseFileReader`): the store may be
    /// open in this process, and a descriptor of our own would release its locks when closed.
    static func decryptedDatabasePages(of path: String, key: [UInt8]) throws -> [UInt8] {
        guard let file = DatabaseFileReader(path: path) else { throw SQLiteError(extendedCode: SQLITE_CANTOPEN, message: "cannot open \(path)") }
        guard let header = file.read(100, at: 0) else { return [] }
        let pageSize = header[16] == 0 && header[17] == 1 ? 65536 : Int(header[16]) << 8 | Int(header[17])
        guard pageSize >= 512 else { return [] }
        var all: [UInt8] = []
        var offset = 0
        while var page = file.read(pageSize, at: Int64(offset)) {
            let opened = key.withUnsafeBufferPointer { k in
                page.withUnsafeMutableBufferPointer { parley_cipher_open_database_page(k.baseAddress, Int64(offset), $0.baseAddress, Int32(pageSize)) }
            }
            if opened == 0 { all += page }
            offset += pageSize
        }
        return all
    }

    /// Zeroes every store key this process holds in its VFSs (a wipe): reads and writes through
    /// them fail from now on.
    public static func forgetCipherKeys() {
        parley_cipher_forget_keys()
    }

    /// Converts the plain database at `path` into an encrypted one under `key`, in place and
    /// with nothing lost: the plain file is checkpointed, copied page by page through the
    /// cipher (`VACUUM INTO` a file beside it), the copy checked (`quick_check`, and every
    /// table's row count against the original), synced and renamed over the original; the
    /// original's content is then overwritten with zeros and removed. A crash at any step leaves
    /// either the plain store or the encrypted one at `path` (and at worst a stray file beside
    /// it that the next conversion removes). `vfs`: the VFS both files go through (tests).
    public static func encryptPlainFile(at path: String, key: [UInt8], vfs: String? = nil) throws {
        let copy = path + ".encrypting"
        let old = path + ".plain"
        for leftover in files(of: copy) + [old] { scrub(leftover) }
        let cipher = try cipherVFS(key: key, over: vfs)
        var counts: [String: Int64] = [:]
        do {
            let source = try Database(path: path, mode: .readWrite, vfs: vfs)
            defer { source.close() }
            try source.checkpoint()
            reserveCipherBytes(try source.openConnection())
            try source.execute("PRAGMA temp_store = MEMORY")
            counts = try rowCounts(source)
            let uri = "file:" + percentEncoded(copy) + "?vfs=" + cipher
            try vacuumInto(source, uri: uri)
        }
        do {
            let target = try Database(path: copy, mode: .readWrite, vfs: vfs, cipherKey: key)
            defer { target.close() }
            let check: String? = try target.scalar("PRAGMA quick_check")
            guard check == "ok", try rowCounts(target) == counts else {
                throw SQLiteError(
                    extendedCode: SQLITE_CORRUPT,
                    message: "the encrypted copy \(copy) does not match \(path) (\(check ?? "no answer")); the plain store is kept")
            }
            try target.checkpoint()
        }
        syncFile(copy)
        // Keep a second name on the plain file until the encrypted one holds `path`.
        guard link(path, old) == 0 else {
            throw SQLiteError(extendedCode: SQLITE_IOERR, message: "cannot link \(path) to \(old): \(String(cString: strerror(errno)))")
        }
        guard rename(copy, path) == 0 else {
            throw SQLiteError(extendedCode: SQLITE_IOERR, message: "cannot rename \(copy) to \(path): \(String(cString: strerror(errno)))")
        }
        syncDirectory(of: path)
        scrub(old)
    }

    /// Runs `VACUUM INTO` a URI (with its VFS) on a connection of its own that accepts URIs.
    private static func vacuumInto(_ source: Database, uri: String) throws {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX
        let resultCode =
            if let vfs = source.vfs { sqlite3_open_v2(source.path, &handle, flags, vfs) } else { sqlite3_open_v2(source.path, &handle, flags, nil) }
        defer { sqlite3_close_v2(handle) }
        guard resultCode == SQLITE_OK, let connection = handle else {
            throw SQLiteError(extendedCode: resultCode, message: "cannot open \(source.path) to encrypt it")
        }
        reserveCipherBytes(connection)
        _ = sqlite3_exec(connection, "PRAGMA temp_store = MEMORY", nil, nil, nil)
        // `percentEncoded` leaves no quote in the URI.
        let sql = "VACUUM INTO '" + uri + "'"
        let code = sqlite3_exec(connection, sql, nil, nil, nil)
        guard code == SQLITE_OK else { throw SQLiteError(resultCode: code, connection: connection, sql: "VACUUM INTO") }
    }

    /// Rows in each table (the check that a copy lost nothing).
    private static func rowCounts(_ database: Database) throws -> [String: Int64] {
        let tables = try database.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").rows { $0.text(0) }
        var counts: [String: Int64] = [:]
        for table in tables {
            counts[table] = try database.scalar("SELECT count(*) FROM \"\(table.replacing("\"", with: "\"\""))\"") ?? 0
        }
        return counts
    }

    private static func percentEncoded(_ path: String) -> String {
        var out = ""
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "/"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"):
                out.append(Character(UnicodeScalar(byte)))
            default:
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }

    /// Overwrites a file's content with zeros, syncs it and removes it (best effort).
    public static func scrub(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if info.st_mode & S_IFMT == S_IFREG, info.st_size > 0 {
            let fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
            if fd >= 0 {
                let zeros = [UInt8](repeating: 0, count: 1 << 20)
                var offset: off_t = 0
                while offset < info.st_size {
                    let n = zeros.withUnsafeBytes { pwrite(fd, $0.baseAddress, min($0.count, Int(info.st_size - offset)), offset) }
                    guard n > 0 else { break }
                    offset += off_t(n)
                }
                _ = fsync(fd)
                _ = Glibc.close(fd)
            }
        }
        unlink(path)
    }

    private static func syncFile(_ path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        _ = Glibc.close(fd)
    }

    private static func syncDirectory(of path: String) {
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        let fd = open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        _ = Glibc.close(fd)
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
