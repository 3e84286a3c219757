import CMicroHTTPD
import Foundation

/// One open Server-Sent Events response: bytes queued by publishers, drained by the server
/// library's content reader on its own thread.
///
/// The reader never spins: with nothing queued it suspends the connection and returns 0, and the
/// next `send` (or `close`) resumes it exactly once (C-LIBRARIES.md, libmicrohttpd). Everything is
/// guarded by one lock; libmicrohttpd is called outside it.
public final class EventStream: @unchecked Sendable {
    /// The most bytes queued for a client that does not read; past it the stream closes (a
    /// stalled tab must not grow memory without bound).
    static let maxQueuedBytes = 1 << 20

    private let lock = NSLock()
    private var queued: [UInt8] = []
    private var closed = false
    private var suspended = false
    /// Set by the server when the response is queued on a connection.
    private var connection: OpaquePointer?
    private var onFinish: (@Sendable () -> Void)?

    public init() {}

    /// Queues one event (`event:` line, one `data:` line per line of `data`). False once the
    /// stream is closed, so publishers can forget it.
    @discardableResult
    public func send(event: String, data: String) -> Bool {
        var text = "event: \(event)\n"
        for line in data.split(separator: "\n", omittingEmptySubsequences: false) { text += "data: \(line)\n" }
        return enqueue(Array((text + "\n").utf8))
    }

    /// Queues a comment line: keeps proxies and the client's connection alive and lets the
    /// server notice a client that went away.
    @discardableResult
    public func heartbeat() -> Bool { enqueue(Array(": heartbeat\n\n".utf8)) }

    /// Ends the stream after what is queued.
    public func close() {
        let wake = lock.withLock { () -> OpaquePointer? in
            closed = true
            return takeSuspended()
        }
        if let wake { MHD_resume_connection(wake) }
    }

    public var isClosed: Bool { lock.withLock { closed } }

    private func enqueue(_ bytes: [UInt8]) -> Bool {
        let (accepted, wake) = lock.withLock { () -> (Bool, OpaquePointer?) in
            guard !closed else { return (false, nil) }
            if queued.count + bytes.count > Self.maxQueuedBytes {
                closed = true
            } else {
                queued += bytes
            }
            return (!closed, takeSuspended())
        }
        if let wake { MHD_resume_connection(wake) }
        return accepted
    }

    /// The connection to resume, if the reader suspended it; clears the mark (under the lock).
    private func takeSuspended() -> OpaquePointer? {
        guard suspended, let connection else { return nil }
        suspended = false
        return connection
    }

    // MARK: The server's side

    func attach(to connection: OpaquePointer, onFinish: @escaping @Sendable () -> Void) {
        lock.withLock {
            self.connection = connection
            self.onFinish = onFinish
        }
    }

    /// The content reader: copies queued bytes, ends the stream once closed and drained, or
    /// suspends the connection until there is more.
    func read(into buffer: UnsafeMutablePointer<CChar>, max: Int) -> Int {
        enum Step { case copied(Int), end, suspend(OpaquePointer) }
        let step = lock.withLock { () -> Step in
            if !queued.isEmpty {
                let count = Swift.min(max, queued.count)
                queued.withUnsafeBufferPointer { source in
                    UnsafeMutableRawPointer(buffer).copyMemory(from: source.baseAddress!, byteCount: count)
                }
                queued.removeFirst(count)
                return .copied(count)
            }
            if closed || connection == nil { return .end }
            suspended = true
            return .suspend(connection!)
        }
        switch step {
        case .copied(let count): return count
        case .end: return parley_mhd_end_of_stream()
        case .suspend(let connection):
            MHD_suspend_connection(connection)
            return 0
        }
    }

    /// The library freed the response: the client is gone or the stream ended.
    func finished() {
        let finish = lock.withLock { () -> (@Sendable () -> Void)? in
            closed = true
            connection = nil
            defer { onFinish = nil }
            return onFinish
        }
        finish?()
    }
}
