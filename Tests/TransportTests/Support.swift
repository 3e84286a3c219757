import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

@testable import Transport

/// Every transport test runs in this one serialized suite: the descriptor-count and idle-loop
/// tests measure the whole process's event loop, which concurrent tests would disturb.
@Suite("Transport", .serialized)
struct TransportTests {}

/// `count` pseudo-random bytes from `generator`.
func randomBytes(_ count: Int, using generator: inout SeededRandom) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    bytes.withUnsafeMutableBytes { buffer in
        for offset in stride(from: 0, to: count, by: 8) {
            withUnsafeBytes(of: generator.next()) { word in
                for index in 0..<min(8, count - offset) { buffer[offset + index] = word[index] }
            }
        }
    }
    return bytes
}

/// An instant `duration` from now: every wait in these tests has one.
func deadline(_ duration: Duration = .seconds(5)) -> ContinuousClock.Instant {
    .now + duration
}

/// Polls `condition` every 5 ms until it holds or `timeout` passes; returns whether it held.
func eventually(timeout: Duration = .seconds(5), _ condition: () async throws -> Bool) async rethrows -> Bool {
    let end = ContinuousClock.now + timeout
    while ContinuousClock.now < end {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return try await condition()
}

/// A listener on an ephemeral loopback port and one connection to it, from both ends, all on
/// `loop`.
func connectedPair(
    loop: EventLoop = .shared, sourceLocation: SourceLocation = #_sourceLocation
) async throws
    -> (client: TCPConnection, server: TCPConnection, listener: TCPListener)
{
    let listener = try TCPListener(host: "127.0.0.1", port: 0, loop: loop)
    async let accepted = listener.accept(deadline: deadline())
    let client = try await TCPConnection.connect(host: "127.0.0.1", port: listener.port, timeout: .seconds(5), loop: loop)
    return (client, try await accepted, listener)
}

/// The process's open descriptors, from /proc/self/fd.
func openDescriptorCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

/// A UDP port for this test run: below 32768 (where the ephemeral range starts) and derived
/// from the process id, so concurrent runs on one host rarely meet (NETWORK-TESTS.md).
func udpTestPort(_ offset: Int) -> UInt16 {
    UInt16(20_000 + Int(getpid()) % 4_000 * 3 + offset)
}

/// True when the IPv6 loopback address is configured on this machine.
func ipv6LoopbackAvailable() -> Bool {
    (try? TCPListener(host: "::1", port: 0)) != nil
}

/// A counter shared between a test and the tasks it starts.
final class Counter: Sendable {
    private let value = Mutex(0)
    func add(_ amount: Int) { value.withLock { $0 += amount } }
    var current: Int { value.withLock { $0 } }
}
