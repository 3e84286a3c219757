import Glibc
import Testing

@testable import Transport

extension TransportTests {
    @Suite("Backpressure and fault injection")
    struct BackpressureTests {
        /// 64 MiB to a peer that reads nothing: the writer stalls once the kernel's buffers are
        /// full, holding one chunk, then finishes when the peer drains the stream.
        @Test func writer_facingNonReadingPeer_waitsWithBoundedMemory_thenDrains() async throws {
            let (client, server, listener) = try await connectedPair()
            defer {
                client.close()
                server.close()
                listener.close()
            }
            let chunkSize = 64 << 10
            let chunkCount = 1_024  // 64 MiB
            let written = Counter()
            let writer = Task {
                for index in 0..<chunkCount {
                    try await client.write([UInt8](repeating: UInt8(truncatingIfNeeded: index), count: chunkSize))
                    written.add(chunkSize)
                }
            }
            // The writer is blocked once its write is parked with its bytes waiting in the connection.
            #expect(await eventually { client.waitingWriterCount == 1 && client.bufferedByteCount > 0 })
            let (stalledAt, held) = (written.current, client.bufferedByteCount)
            print("writer stalled after \(stalledAt) bytes")
            // It stays blocked: two rounds of the loop, each of which serves a writable socket
            // before its timers, send nothing more, so the parked write cannot be resumed.
            for _ in 0..<2 { await roundTrip(client.loop) }
            #expect(client.bufferedByteCount == held, "the kernel took more bytes while the peer read nothing")
            #expect(client.waitingWriterCount == 1, "the writer went on while the peer read nothing")
            #expect(written.current == stalledAt, "the writer went on while the peer read nothing")
            #expect(stalledAt < 32 << 20, "the kernel took \(stalledAt) bytes without a reader")
            #expect(client.bufferedByteCount <= chunkSize, "more than the blocked writer's own chunk is held")

            var received = 0
            while received < chunkSize * chunkCount {
                let bytes = try await server.read(maxBytes: 1 << 20, deadline: deadline(.seconds(20)))
                try #require(!bytes.isEmpty)
                // Chunk k is k's low byte throughout; check run by run (a debug build is slow per byte).
                var index = 0
                while index < bytes.count {
                    let offset = received + index
                    let run = min(chunkSize - offset % chunkSize, bytes.count - index)
                    guard bytes[index] == UInt8(truncatingIfNeeded: offset / chunkSize), isConstant(bytes, index, run)
                    else {
                        Issue.record("wrong bytes in the run at offset \(offset)")
                        return
                    }
                    index += run
                }
                received += bytes.count
            }
            try await writer.value
            #expect(written.current == chunkSize * chunkCount)
            #expect(client.bufferedByteCount == 0)
        }

        /// Returns once `loop` has run a timer due now: a whole round of the loop, whose ready
        /// descriptors it served first.
        private func roundTrip(_ loop: EventLoop) async {
            await withCheckedContinuation { continuation in _ = loop.schedule(at: .now) { continuation.resume() } }
        }

        /// True when `bytes[start..<start + count]` are all equal: each byte equals the next.
        private func isConstant(_ bytes: [UInt8], _ start: Int, _ count: Int) -> Bool {
            count < 2
                || bytes.withUnsafeBytes {
                    memcmp($0.baseAddress! + start, $0.baseAddress! + start + 1, count - 1) == 0
                }
        }

        @Test func enqueue_beyondSendBufferLimit_throwsSendBufferFull() async throws {
            let (client, server, listener) = try await connectedPair()
            defer {
                client.close()
                server.close()
                listener.close()
            }
            client.sendBufferLimit = 1 << 20
            let frame = [UInt8](repeating: 1, count: 64 << 10)
            var enqueued = 0
            do {
                while enqueued < 256 << 20 {
                    try client.enqueue(frame)
                    enqueued += frame.count
                }
                Issue.record("256 MiB enqueued to a peer that reads nothing")
            } catch TransportError.sendBufferFull(let limit) {
                #expect(limit == 1 << 20)
            }
            #expect(client.bufferedByteCount <= 1 << 20)
            // The queued bytes still arrive, in full, once the peer reads.
            let expected = enqueued
            let drain = Task {
                var total = 0
                while total < expected {
                    let bytes = try await server.read(maxBytes: 1 << 20, deadline: deadline())
                    if bytes.isEmpty { break }
                    total += bytes.count
                }
                return total
            }
            try await client.flush(deadline: deadline())
            #expect(try await drain.value == expected)
        }

        @Test func write_pastDeadline_timesOutAndClosesConnection() async throws {
            let (client, server, listener) = try await connectedPair()
            defer {
                client.close()
                server.close()
                listener.close()
            }
            let big = [UInt8](repeating: 0, count: 64 << 20)
            await #expect(throws: TransportError.timedOut(operation: "write to \(client.remoteAddress)")) {
                try await client.write(big, deadline: .now + .milliseconds(200))
            }
            #expect(client.isClosed)
        }

        @Test func writeDelay_holdsBytesBack_andKeepsOrder() async throws {
            let (client, server, listener) = try await connectedPair()
            defer {
                client.close()
                server.close()
                listener.close()
            }
            client.faultInjection = FaultInjection(writeDelay: .milliseconds(150))
            let start = ContinuousClock.now
            try client.enqueue([1, 2, 3])
            client.faultInjection = .none
            try await client.write([4, 5])  // queued behind the delayed bytes, so it waits too
            #expect(try await server.readExactly(5, deadline: deadline()) == [1, 2, 3, 4, 5])
            #expect(ContinuousClock.now - start >= .milliseconds(150))
        }

        @Test func dropAfterBytes_resetsConnection_afterExactlyThatMany() async throws {
            let (client, server, listener) = try await connectedPair()
            defer {
                client.close()
                server.close()
                listener.close()
            }
            client.faultInjection = FaultInjection(dropAfterBytes: 1_000)
            let payload = (0..<5_000).map { UInt8(truncatingIfNeeded: $0) }
            await #expect(throws: TransportError.connectionReset(peer: client.remoteAddress.description)) {
                try await client.write(payload)
            }
            #expect(client.isClosed)
            var received: [UInt8] = []
            do {
                while true {
                    let bytes = try await server.read(deadline: deadline())
                    if bytes.isEmpty { break }
                    received += bytes
                }
            } catch TransportError.connectionReset {
                // The reset reached the peer: what it received before is what counts.
            }
            #expect(received == Array(payload[..<1_000]))
        }
    }
}
