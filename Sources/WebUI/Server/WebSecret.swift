import Foundation
import Sodium
import Synchronization

/// The web UI's login secret: `web.secret` in the data directory (mode 0600), the token every
/// signed-in browser holds in its cookie. Kept across node restarts, so an open page signs in
/// again by itself; replaced by `parley web logout --all`, which signs every browser out. The
/// running server notices a replaced file at the next request (one `stat`), so the two need not
/// talk.
public final class WebSecret: Sendable {
    public let path: String
    private let cached = Mutex<(identity: FileIdentity, secret: String)?>(nil)

    /// What tells one version of the file from the next.
    struct FileIdentity: Equatable {
        var inode: UInt64
        var modified: Int
        var modifiedNanoseconds: Int
    }

    public init(dataDirectory: String) {
        path = dataDirectory + "/web.secret"
    }

    /// The secret, created if the file is missing or does not hold one.
    public func current() throws(WebError) -> String {
        if let identity = Self.identity(of: path), let hit = cached.withLock({ $0 }), hit.identity == identity { return hit.secret }
        if let text = try? String(contentsOfFile: path, encoding: .utf8), let secret = Self.parse(text), let identity = Self.identity(of: path) {
            cached.withLock { $0 = (identity, secret) }
            return secret
        }
        return try replace()
    }

    /// Writes a new secret (every browser signed in with the old one is signed out) and returns it.
    @discardableResult
    public func replace() throws(WebError) -> String {
        let secret = Sodium.hex(Sodium.randomBytes(32))
        let temporary = path + ".tmp-" + Sodium.hex(Sodium.randomBytes(6))
        guard FileManager.default.createFile(atPath: temporary, contents: Data((secret + "\n").utf8), attributes: [.posixPermissions: 0o600]),
            rename(temporary, path) == 0
        else {
            try? FileManager.default.removeItem(atPath: temporary)
            throw .internalError("cannot write \(path): \(String(cString: strerror(errno))); check the data directory's permissions")
        }
        if let identity = Self.identity(of: path) { cached.withLock { $0 = (identity, secret) } }
        return secret
    }

    static func parse(_ text: String) -> String? {
        let secret = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return secret.count == 64 && secret.allSatisfy(\.isHexDigit) ? secret : nil
    }

    static func identity(of path: String) -> FileIdentity? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileIdentity(inode: UInt64(info.st_ino), modified: info.st_mtim.tv_sec, modifiedNanoseconds: info.st_mtim.tv_nsec)
    }
}
