import Foundation
import Identity
import Store
import Synchronization
import Transport

/// Talks to a running node over its control socket: what `parley peers`, `status` and
/// `doctor` use.
///
/// `connect` fails with `ControlClientError.noNode` when nothing listens at the data
/// directory's `control.sock` — no file, or a stale one left by a node killed with `kill -9` —
/// which a command reports as "no node is running".
public final class ControlClient: Sendable {
    private let connection: UnixConnection
    private let lines = LockedLines()

    private init(connection: UnixConnection) {
        self.connection = connection
    }

    /// Connects to the node of `dataDirectory`.
    public static func connect(dataDirectory: String) throws(ControlClientError) -> ControlClient {
        let path = dataDirectory + "/control.sock"
        do {
            return ControlClient(connection: try UnixConnection.connect(path: path))
        } catch .noSocketListener {
            throw .noNode
        } catch {
            throw .failed("cannot reach the node's control socket \(path): \(error)")
        }
    }

    /// Sends `request` and waits (up to `timeout`) for its response. Requests on one client
    /// MUST NOT overlap.
    public func send(_ request: ControlRequest, timeout: Duration = .seconds(10)) async throws(ControlClientError) -> ControlResponse {
        let deadline = ContinuousClock.now + timeout
        do {
            var line = try ControlProtocol.line(request)
            line.append(UInt8(ascii: "\n"))
            try await connection.write(line, deadline: deadline)
            while true {
                if let line = try lines.next() {
                    return try ControlProtocol.response(from: line)
                }
                let bytes = try await connection.read(deadline: deadline)
                guard !bytes.isEmpty else { throw ControlClientError.failed("the node closed the control connection") }
                lines.feed(bytes)
            }
        } catch let error as ControlClientError {
            throw error
        } catch TransportError.timedOut {
            throw .failed("the node did not answer within \(timeout)")
        } catch {
            throw .failed("control socket: \(error)")
        }
    }

    /// Sends `request` without waiting for the answer (`poke`: the node acts on a request even
    /// when its client has gone). Returns once the line is handed to the socket.
    public func notify(_ request: ControlRequest, timeout: Duration = .seconds(1)) async throws(ControlClientError) {
        do {
            var line = try ControlProtocol.line(request)
            line.append(UInt8(ascii: "\n"))
            try await connection.write(line, deadline: .now + timeout)
        } catch {
            throw .failed("control socket: \(error)")
        }
    }

    /// Sends `watch` and returns the node's events as they come. The stream ends when the node
    /// stops or the connection breaks (with an error), or when the caller stops iterating (which
    /// closes the connection). A client that watches sends nothing else.
    public func watch() async throws(ControlClientError) -> AsyncThrowingStream<NodeEvent, any Error> {
        let response = try await send(ControlRequest(.watch))
        guard response.ok else { throw .failed(response.error ?? "the node refused to stream events") }
        return AsyncThrowingStream { continuation in
            let reader = Task {
                do {
                    while true {
                        while let line = try lines.next() {
                            let event = try ControlProtocol.decoder.decode(ControlEvent.self, from: Data(line))
                            if let known = event.nodeEvent { continuation.yield(known) }
                        }
                        let bytes = try await connection.read()
                        guard !bytes.isEmpty else { break }
                        lines.feed(bytes)
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { [connection] _ in
                reader.cancel()
                connection.close()
            }
        }
    }

    /// What the node's links say about each peer's presence (`Node.livePresence`).
    public func presence() async throws(ControlClientError) -> [UserID: PeerPresence] {
        let response = try await send(ControlRequest(.presence))
        guard response.ok, let reports = response.presence else { throw .failed(response.error ?? "the node sent no presence") }
        var presence: [UserID: PeerPresence] = [:]
        for report in reports {
            guard let id = UserID(text: report.id) else { continue }
            presence[id] = PeerPresence(linked: report.linked, lastSeenMillis: report.lastSeen)
        }
        return presence
    }

    /// Closes the connection.
    public func close() {
        connection.close()
    }
}

/// Why a control request failed.
public enum ControlClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No node runs for the data directory (no socket, or a stale one).
    case noNode
    /// The node was reached but the exchange failed.
    case failed(String)

    public var description: String {
        switch self {
        case .noNode: "no node is running"
        case .failed(let message): message
        }
    }
}

/// The client's receive buffer behind a lock (the client is Sendable; requests do not overlap).
private final class LockedLines: Sendable {
    private let buffer = Mutex(LineBuffer(limit: ControlProtocol.maxLineBytes))

    func feed(_ bytes: [UInt8]) {
        buffer.withLock { $0.feed(bytes) }
    }

    func next() throws -> [UInt8]? {
        try buffer.withLock { try $0.nextLine() }
    }
}
