import Discovery
import Synchronization
import Transport

/// Sends beacons in order from one task, so the node's directive switch never waits on a
/// socket, and counts what failed for `parley doctor`.
final class BeaconSender: Sendable {
    private let socket: UDPSocket
    private let queue: AsyncStream<(bytes: [UInt8], target: PeerEndpoint)>.Continuation
    private let task: Task<Void, Never>
    private let counters: CounterBox

    final class CounterBox: Sendable {
        let value = Mutex(Counters())
    }

    struct Counters: Sendable {
        var sent: UInt64 = 0
        var failed: UInt64 = 0
        var lastError: String?
    }

    init(socket: UDPSocket) {
        self.socket = socket
        let (stream, continuation) = AsyncStream.makeStream(of: (bytes: [UInt8], target: PeerEndpoint).self)
        queue = continuation
        let counters = CounterBox()
        self.counters = counters
        task = Task {
            for await (bytes, target) in stream {
                do {
                    try await socket.send(bytes, to: SocketAddress(ipAddress: target.host, port: target.port))
                    counters.value.withLock { $0.sent += 1 }
                } catch {
                    counters.value.withLock {
                        $0.failed += 1
                        $0.lastError = "to \(target): \(error)"
                    }
                }
            }
        }
    }

    /// Queues one beacon.
    func send(_ bytes: [UInt8], to target: PeerEndpoint) {
        queue.yield((bytes, target))
    }

    /// Sends what is queued, then stops.
    func finish() async {
        queue.finish()
        await task.value
    }

    var snapshot: Counters { counters.value.withLock { $0 } }
}
