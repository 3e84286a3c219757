import Foundation

/// The lock that makes one data directory belong to one running node: `node.lock`, held with
/// `flock` for the node's lifetime and holding its pid.
///
/// The kernel drops an `flock` when its process dies, even by `kill -9`, so a crash never leaves
/// a stale lock; a second `parley run` on the directory fails at once, naming the first one's
/// pid. The file itself stays (removing it would race with a starting node).
public final class DataDirectoryLock: Sendable {
    private let descriptor: Int32
    let path: String

    /// Takes the lock of `directory`, or throws `NodeError.alreadyRunning`.
    public init(directory: String) throws(NodeError) {
        path = directory + "/node.lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw .dataDirectory("cannot open \(path): \(String(cString: strerror(errno))); check the directory's permissions")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = read(fd, &buffer, buffer.count)
            close(fd)
            if code == EWOULDBLOCK {
                let pid = count > 0 ? Int32(String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) : nil
                throw .alreadyRunning(directory: directory, pid: pid)
            }
            throw .dataDirectory("cannot lock \(path): \(String(cString: strerror(code)))")
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, pid, pid.count, 0)
        descriptor = fd
    }

    /// Releases the lock (also done by the kernel at exit).
    public func release() {
        close(descriptor)
    }
}
