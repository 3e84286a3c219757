import Sodium

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The few file system calls a key file needs, checked the same way: every failure comes back
/// as a `KeyFileError` or an `errno`, never a trap.
enum KeyFileIO {
    /// The system's text for an `errno` value.
    static func text(ofErrno code: Int32) -> String {
        String(cString: strerror(code))
    }

    /// The bytes of the key file at `path` (at most `limit` + 1 of them), or nil if nothing is
    /// there. Refuses what is not a regular file, a file of another user, and a file that group
    /// or other users may access.
    static func readIfPresent(at path: String, limit: Int) throws(KeyFileError) -> [UInt8]? {
        // O_NONBLOCK: a FIFO planted at the path must not hang the open; fstat refuses it below.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        if fd < 0 {
            let code = errno
            if code == ENOENT { return nil }
            throw .unreadable(path: path, reason: text(ofErrno: code))
        }
        defer { close(fd) }

        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .unreadable(path: path, reason: text(ofErrno: errno)) }
        guard info.st_mode & S_IFMT == S_IFREG else {
            let reason = info.st_mode & S_IFMT == S_IFDIR ? "it is a directory" : "it is not a regular file"
            throw .unreadable(path: path, reason: reason)
        }
        let user = geteuid()
        guard info.st_uid == user else {
            throw .wrongOwner(path: path, owner: UInt32(info.st_uid), user: UInt32(user))
        }
        guard info.st_mode & 0o077 == 0 else {
            throw .insecurePermissions(path: path, mode: UInt32(info.st_mode & 0o7777))
        }

        var contents = [UInt8](repeating: 0, count: limit + 1)
        var filled = 0
        while filled < contents.count {
            let n = contents.withUnsafeMutableBytes { buffer in
                read(fd, buffer.baseAddress! + filled, buffer.count - filled)
            }
            if n > 0 {
                filled += n
            } else if n == 0 {
                break
            } else if errno != EINTR {
                let code = errno
                wipe(&contents)
                throw .unreadable(path: path, reason: text(ofErrno: code))
            }
        }
        contents.removeLast(contents.count - filled)
        return contents
    }

    /// Creates `path` exclusively with mode 0600 and writes `contents` durably; returns the
    /// `errno` of the first failure (having removed the partial file), or nil on success.
    static func writeNewFile(at path: String, contents: [UInt8]) -> Int32? {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if fd < 0 { return errno }
        func fail() -> Int32 {
            let code = errno
            close(fd)
            unlink(path)
            return code
        }
        // The umask may have cleared bits of 0600; the owner must still be able to read the key.
        guard fchmod(fd, 0o600) == 0 else { return fail() }
        var written = 0
        while written < contents.count {
            let n = contents.withUnsafeBytes { buffer in
                write(fd, buffer.baseAddress! + written, buffer.count - written)
            }
            if n > 0 {
                written += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                if n == 0 { errno = EIO }
                return fail()
            }
        }
        guard fsync(fd) == 0 else { return fail() }
        guard close(fd) == 0 else {
            let code = errno
            unlink(path)
            return code
        }
        return nil
    }

    /// The text for a missing file.
    static var noSuchFile: String { text(ofErrno: ENOENT) }

    /// Creates the file `path` holding `contents` (mode 0600, on disk), failing with
    /// `.alreadyExists` rather than replace anything there.
    ///
    /// The bytes go to a temporary file beside `path` first, which `link` then names `path`:
    /// `link` never replaces, and nobody sees a half-written key. Where the file system has no
    /// hard links, `path` itself is written with `O_CREAT | O_EXCL`.
    static func createWithoutReplacing(at path: String, contents: [UInt8]) throws(KeyFileError) {
        let temporary = path + ".tmp-" + Sodium.hex(Sodium.randomBytes(6))
        if let code = writeNewFile(at: temporary, contents: contents) {
            throw .cannotCreate(path: path, reason: text(ofErrno: code))
        }
        defer { unlink(temporary) }

        if link(temporary, path) != 0 {
            let code = errno
            if code == EEXIST { throw .alreadyExists(path: path) }
            guard [EPERM, EOPNOTSUPP, ENOTSUP, EMLINK, ENOSYS].contains(code) else {
                throw .cannotCreate(path: path, reason: text(ofErrno: code))
            }
            if let code = writeNewFile(at: path, contents: contents) {
                if code == EEXIST { throw .alreadyExists(path: path) }
                throw .cannotCreate(path: path, reason: text(ofErrno: code))
            }
        }
        syncDirectory(containing: path)
    }

    /// Flushes the directory holding `path`, so a new name survives a crash. Best effort: some
    /// file systems cannot sync a directory, and the file itself is already on disk.
    static func syncDirectory(containing path: String) {
        let directory: String
        if let slash = path.lastIndex(of: "/") {
            directory = slash == path.startIndex ? "/" : String(path[..<slash])
        } else {
            directory = "."
        }
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }

    /// Overwrites `bytes` with zeros in a way the optimizer keeps (secret copies on the heap).
    static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress, buffer.count > 0 else { return }
            #if canImport(Glibc)
                explicit_bzero(base, buffer.count)
            #else
                _ = memset_s(base, buffer.count, 0, buffer.count)
            #endif
        }
    }
}
