import Glibc

extension Database {
    /// The files SQLite keeps for a database at `path`: the database, its WAL, its shared-memory
    /// index and a rollback journal.
    public static func files(of path: String) -> [String] {
        ["", "-wal", "-shm", "-journal"].map { path + $0 }
    }

    /// Makes the database at `path` private before SQLite opens it: a missing file is created
    /// with mode 0600, and group and other permissions are taken off the existing files
    /// (`files(of:)`) that this user owns. SQLite creates a database with mode 0644 less the
    /// umask, and its WAL and shared-memory files with the database file's mode, so a file made
    /// by SQLite alone in a directory of mode 0755 is world-readable, with message text in it.
    /// Files it cannot change are left for `parley doctor` to report.
    ///
    /// Creates with `mknod` and changes modes by path, so no descriptor of the file is ever
    /// opened here: closing one would release every POSIX lock this process holds on the file
    /// (`DatabaseFileReader`), and another connection of this process may be opening it now.
    static func keepPrivate(_ path: String) {
        guard !path.isEmpty, path != ":memory:", !path.hasPrefix("file:") else { return }
        // Fails (EEXIST) on anything already at the path, a symbolic link included.
        if mknod(path, S_IFREG | 0o600, 0) == 0 {
            // The umask may have taken the owner's bits too; the owner needs read and write.
            _ = chmod(path, 0o600)
            return
        }
        for file in files(of: path) {
            var info = stat()
            guard lstat(file, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_mode & 0o077 != 0, info.st_uid == geteuid() else { continue }
            _ = chmod(file, info.st_mode & 0o700)
        }
    }
}
