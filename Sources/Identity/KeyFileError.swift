/// Why a key file could not be loaded or created. Every case names the file; no case ever
/// carries key material, so a description is safe to print and log.
public enum KeyFileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file is not a key file, or it was changed: bad magic, wrong length, bad checksum,
    /// an impossible field, or a seed that does not give the stored public key.
    case corrupted(path: String)
    /// The file is a key file of a format this version does not know (a newer Parley wrote it).
    case unsupportedFormat(path: String)
    /// The file is protected by a passphrase and none was given.
    case passphraseRequired(path: String)
    /// The passphrase does not open the file (the file's checksum is intact, so the file is not damaged).
    case wrongPassphrase(path: String)
    /// Group or other users may access the file (`mode` holds the permission bits).
    case insecurePermissions(path: String, mode: UInt32)
    /// The file belongs to user `owner`, not to the user running Parley (`user`).
    case wrongOwner(path: String, owner: UInt32, user: UInt32)
    /// The file exists but cannot be read; `reason` is the system's text (e.g. from `errno`).
    case unreadable(path: String, reason: String)
    /// A new key file cannot be written; `reason` is the system's text (e.g. from `errno`).
    case cannotCreate(path: String, reason: String)
    /// `create` found something at the path; an existing key file is never replaced.
    case alreadyExists(path: String)
    /// The store key file was sealed for another identity than the one in the data directory.
    case otherIdentity(path: String)

    public var description: String {
        switch self {
        case .corrupted(let path):
            "the key file \(path) is damaged (bad magic, length or checksum); restore it from a backup, "
                + "or move it away and run `parley init` to make a new identity"
        case .unsupportedFormat(let path):
            "the key file \(path) was written by a newer version of Parley; upgrade Parley to use it"
        case .passphraseRequired(let path):
            "the key file \(path) is protected by a passphrase; run again and give its passphrase"
        case .wrongPassphrase(let path):
            "the passphrase does not unlock the key file \(path); run again with the right passphrase"
        case .insecurePermissions(let path, let mode):
            "the key file \(path) can be read by other users (mode \(octal(mode))); "
                + "run `chmod 600 \(shellQuoted(path))` and try again"
        case .wrongOwner(let path, let owner, let user):
            "the key file \(path) belongs to user \(owner), not to you (user \(user)); "
                + "use your own data directory (--data-dir), or take ownership with `chown`"
        case .unreadable(let path, let reason):
            "cannot read the key file \(path): \(reason); check that it is a file you may read"
        case .cannotCreate(let path, let reason):
            "cannot create the key file \(path): \(reason); check that its directory exists and is writable, "
                + "or choose another data directory (--data-dir)"
        case .alreadyExists(let path):
            "something already exists at \(path) and Parley never overwrites a key file; "
                + "load it, or move it away first to make a new identity"
        case .otherIdentity(let path):
            "the store key \(path) belongs to another identity than this data directory's identity.key; "
                + "put back the identity.key it came with"
        }
    }
}

/// `0644`-style text of permission bits.
private func octal(_ mode: UInt32) -> String {
    let digits = String(mode & 0o7777, radix: 8)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}

/// `path` as one shell word, so a suggested command can be pasted as is.
private func shellQuoted(_ path: String) -> String {
    let plain = path.utf8.allSatisfy { c in
        switch c {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "/._-+,:@%".utf8.contains(c)
        }
    }
    if plain && !path.isEmpty { return path }
    return "'" + path.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
}
