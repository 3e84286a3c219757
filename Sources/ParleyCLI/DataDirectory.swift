#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The directory that holds a node's files: `identity.key` (mode 0600) and `parley.db`.
///
/// Chosen by docs/DESIGN.md §6.1: `--data-dir DIR`, else `$PARLEY_DATA_DIR`, else
/// `$XDG_DATA_HOME/parley`, else `~/.local/share/parley`. Every problem with the path becomes a
/// one-line `CLIError` that names the path and the way out, because a wrong data directory is
/// the most common reason a first command fails.
struct DataDirectory: Sendable, Equatable {
    /// Absolute path, so every message names the same place whatever the working directory.
    let path: String

    var keyPath: String { path + "/identity.key" }
    var databasePath: String { path + "/parley.db" }
    /// The key `parley.db` is encrypted under (`StoreKeyFile`).
    var storeKeyPath: String { path + "/store.key" }
    /// Where the running node's web UI listens (`http://HOST:PORT/`, never the token), for
    /// `parley status`; written by `parley run`, removed when it stops.
    var webAddressPath: String { path + "/web.address" }

    /// The directory chosen by the option (if any) and the environment.
    static func resolve(option: String?, environment: [String: String]) throws(CLIError) -> DataDirectory {
        func nonEmpty(_ key: String) -> String? {
            guard let value = environment[key], !value.isEmpty else { return nil }
            return value
        }
        let chosen: String
        if let option {
            guard !option.isEmpty else { throw .usage("--data-dir needs a directory, not an empty string", command: nil) }
            chosen = option
        } else if let fromEnvironment = nonEmpty("PARLEY_DATA_DIR") {
            chosen = fromEnvironment
        } else if let xdg = nonEmpty("XDG_DATA_HOME"), xdg.hasPrefix("/") {
            // The XDG spec says a relative XDG_DATA_HOME is invalid and must be ignored.
            chosen = xdg + "/parley"
        } else if let home = nonEmpty("HOME") ?? passwordHome() {
            chosen = home + "/.local/share/parley"
        } else {
            throw .failure("cannot find a data directory: HOME is not set; give one with --data-dir DIR or $PARLEY_DATA_DIR")
        }
        return DataDirectory(path: absolute(chosen))
    }

    /// Checks that the directory exists and is a directory: commands other than `init` never
    /// create it, because finding nothing means the identity is missing.
    func requireExisting() throws(CLIError) {
        var info = stat()
        if stat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else { throw notADirectory() }
            return try keepPrivate(info)
        }
        switch errno {
        case ENOENT: throw .failure(Self.noIdentity(in: path))
        case ENOTDIR: throw blockedByFile()
        case let code: throw .failure("cannot use the data directory \(path): \(errnoText(code)); check its permissions, or choose another with --data-dir")
        }
    }

    /// Creates the directory (mode 0700) and any missing parents, like `mkdir -p`; an existing
    /// directory is made 0700 (`keepPrivate`).
    func create() throws(CLIError) {
        var info = stat()
        if stat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else { throw notADirectory() }
            return try keepPrivate(info)
        }
        var prefix = ""
        let components = path.split(separator: "/")
        for (index, component) in components.enumerated() {
            prefix += "/" + component
            let isLast = index == components.count - 1
            if mkdir(prefix, isLast ? 0o700 : 0o755) == 0 {
                // The umask may have taken bits away; the owner needs all three.
                if isLast { _ = chmod(prefix, 0o700) }
                continue
            }
            let code = errno
            if code == EEXIST {
                var existing = stat()
                if stat(prefix, &existing) == 0, existing.st_mode & S_IFMT == S_IFDIR { continue }
                throw isLast ? notADirectory() : blockedByFile()
            }
            if code == ENOTDIR { throw blockedByFile() }
            let place = prefix == path ? "" : " (at \(prefix))"
            throw .failure(
                "cannot create the data directory \(path): \(errnoText(code))\(place); "
                    + "choose a directory you may write with --data-dir")
        }
    }

    /// Takes group and other permissions off the directory (`info` is its `stat`): it holds the
    /// key and the store, whatever mode it had before Parley used it. One owned by another user
    /// is refused, since only its owner could tighten it.
    private func keepPrivate(_ info: stat) throws(CLIError) {
        guard info.st_mode & 0o077 != 0 else { return }
        let mode = String(info.st_mode & 0o777, radix: 8)
        guard info.st_uid == geteuid() else {
            throw .failure(
                "the data directory \(path) is mode \(mode) and belongs to another user, so others may read its files; "
                    + "have its owner run `chmod 700 \(path)`, or choose another directory with --data-dir")
        }
        guard chmod(path, 0o700) == 0 else {
            throw .failure("cannot make the data directory \(path) private (mode \(mode)): \(errnoText(errno)); run `chmod 700 \(path)`")
        }
    }

    /// Whether the key file exists (as anything: a directory there is the key file's problem).
    var hasKeyFile: Bool {
        var info = stat()
        return lstat(keyPath, &info) == 0
    }

    static func noIdentity(in path: String) -> String {
        "no identity in \(path); run `parley init --nick NAME` first"
    }

    private func notADirectory() -> CLIError {
        .failure("the data directory \(path) is a file, not a directory; move it away, or choose another directory with --data-dir")
    }

    /// The error for a path that runs through a regular file (`ENOTDIR`), naming that file.
    private func blockedByFile() -> CLIError {
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/" + component
            var info = stat()
            if stat(prefix, &info) == 0, info.st_mode & S_IFMT != S_IFDIR {
                return .failure("cannot use the data directory \(path): \(prefix) is a file, not a directory; choose another directory with --data-dir")
            }
        }
        return .failure("cannot use the data directory \(path): a part of the path is not a directory; choose another directory with --data-dir")
    }

    /// `path` made absolute against the working directory, with `.` and empty parts dropped.
    static func absolute(_ path: String) -> String {
        var full = path
        if !path.hasPrefix("/") {
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            if getcwd(&buffer, buffer.count) != nil {
                let cwd = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                full = cwd + "/" + path
            }
        }
        let parts = full.split(separator: "/").filter { $0 != "." }
        return (full.hasPrefix("/") ? "/" : "") + parts.joined(separator: "/")
    }

    /// The home directory from the password database, for when `HOME` is unset.
    private static func passwordHome() -> String? {
        guard let entry = getpwuid(getuid()), let directory = entry.pointee.pw_dir else { return nil }
        let home = String(cString: directory)
        return home.isEmpty ? nil : home
    }
}

/// The system's text for an `errno` value.
func errnoText(_ code: Int32) -> String {
    String(cString: strerror(code))
}

/// Reads a small file whole (a passphrase file); throws a failure naming `what` and the path.
func readSmallFile(_ path: String, what: String, limit: Int = 64 * 1024) throws(CLIError) -> [UInt8] {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else {
        throw .failure("cannot read the \(what) \(path): \(errnoText(errno)); check the path")
    }
    defer { close(descriptor) }
    var contents: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if n > 0 {
            contents += chunk[0..<n]
            if contents.count > limit { throw .failure("the \(what) \(path) is too large; it should hold one line") }
        } else if n == 0 {
            return contents
        } else if errno != EINTR {
            throw .failure("cannot read the \(what) \(path): \(errnoText(errno)); check that it is a file you may read")
        }
    }
}
