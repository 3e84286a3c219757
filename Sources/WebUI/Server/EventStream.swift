import CMicroHTTPD
import Foundation
import Synchronization

/// One open Server-Sent Events response: bytes queued by publishers, drained by the server
/// library's content reader on its own thread.
///
/// The reader never spins: with nothing queued it suspends the connection and returns 0, and the
/// next `send` (or `close`) resumes it exactly once (C-LIBRARIES.md, libmicrohttpd). Everything is
/// guarded by one lock (`state`); libmicrohttpd is called outside it.
public final class EventStream: Sendable {
    /// The most bytes queued for a client that does not read; past it the stream closes (a
    /// stalled tab must not grow memory without bound).
    static let maxQueuedBytes = 1 << 20

    private struct State {
        var queued: [UInt8] = []
        var closed = false
        var suspended = false
        /// Set by the server when the response is queued on a connection.
        var connection: MHDHandle?
        var onFinish: (@Sendable () -> Void)?

        /// The connection to resume, if the reader suspended it; clears the mark (under the lock).
        mutating func takeSuspended() -> OpaquePointer? {
            guard suspended, let connection else { return nil }
            suspended = false
            return connection.pointer
        }
    }
    private let state = Mutex(State())

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
        let wake = state.withLock { state -> OpaquePointer? in
            state.closed = true
            return state.takeSuspended()
        }
        if let wake { MHD_resume_connection(wake) }
    }

    public var isClosed: Bool { state.withLock { $0.closed } }

    private func enqueue(_ bytes: [UInt8]) -> Bool {
        let (accepted, wake) = state.withLock { state -> (Bool, OpaquePointer?) in
            guard !state.closed else { return (false, nil) }
            if state.queued.count + bytes.count > Self.maxQueuedBytes {
                state.closed = true
            } else {
                state.queued += bytes
            }
            return (!state.closed, state.takeSuspended())
        }
        if let wake { MHD_resume_connection(wake) }
        return accepted
    }

    // MARK: The server's side

    func attach(to connection: OpaquePointer, onFinish: @escaping @Sendable () -> Void) {
        let connection = MHDHandle(connection)
        state.withLock {
            $0.connection = connection
            $0.onFinish = onFinish
        }
    }

    /// The content reader: copies queued bytes, ends the stream once closed and drained, or
    /// suspends the connection until there is more.
    func read(into buffer: UnsafeMutablePointer<CChar>, max: Int) -> Int {
        enum Step { case copied(Int), end, suspend(OpaquePointer) }
        let step = state.withLock { state -> Step in
            if !state.queued.isEmpty {
                let count = Swift.min(max, state.queued.count)
                state.queued.withUnsafeBufferPointer { source in
                    UnsafeMutableRawPointer(buffer).copyMemory(from: source.baseAddress!, byteCount: count)
                }
                state.queued.removeFirst(count)
                return .copied(count)
            }
            if state.closed || state.connection == nil { return .end }
            state.suspended = true
            return .suspend(state.connection!.pointer)
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
        let finish = state.withLock { state -> (@Sendable () -> Void)? in
            state.closed = true
            state.connection = nil
            defer { state.onFinish = nil }
            return state.onFinish
        }
        finish?()
    }
}
