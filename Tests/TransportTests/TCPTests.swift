import TestSupport
import Testing

@testable import Transport

extension TransportTests {
    @Suite("TCP")
    struct TCPTests {
        @Test func echo_oneMebibyteInRandomChunks_comesBackIntact() async throws {
            let seed = SeededRandom.announce("echo_oneMebibyteInRandomChunks")
            var generator = SeededRandom(seed: seed)
            let payload = randomBytes(1 << 20, using: &generator)
            var chunks: [ArraySlice<UInt8>] = []
            var offset = 0
            while offset < payload.count {
                let size = min(Int.random(in: 1...65_536, using: &generator), payload.count - offset)
                chunks.append(payload[offset..<offset + size])
                offset += size
            }
            let (client, server, listener) = try await connectedPair()
            defer {
                client.close()
                server.close()
                listener.close()
            }

            let echo = Task {
                while true {
                    let bytes = try await server.read(deadline: deadline())
                    if bytes.isEmpty { break }
                    try await server.write(bytes, deadline: deadline())
                }
                server.shutdownWrite()
            }
            let writer = Task {
                for chunk in chunks { try await client.write(Array(chunk), deadline: deadline()) }
                client.shutdownWrite()
            }
            var received: [UInt8] = []
            while true {
                let bytes = try await client.read(maxBytes: Int.random(in: 1...100_000), deadline: deadline())
                if bytes.isEmpty { break }
                received += bytes
            }
            try await writer.value
            try await echo.value
            #expect(received.count == payload.count, "seed \(seed)")
            #expect(received == payload, "seed \(seed)")
        }

        @Test func read_afterPeerCloses_returnsEmptyEveryTime() async throws {
            let (client, server, listener) = try await connectedPair()
            defer {
                client.close()
                server.close()
                listener.close()
            }
            try await client.write([1, 2, 3])
            client.close()
            #expect(try await server.readExactly(3, deadline: deadline()) == [1, 2, 3])
            #expect(try await server.read(deadline: deadline()) == [])
            #expect(try await server.read(deadline: deadline()) == [])
        }

        @Test func connect_toClosedPort_isRefused() async throws {
            let listener = try TCPListener(host: "127.0.0.1", port: 0)
            let port = listener.port
            listener.close()
            await #expect(throws: TransportError.connectionRefused(host: "127.0.0.1", port: port)) {
                _ = try await TCPConnection.connect(host: "127.0.0.1", port: port, timeout: .seconds(5))
            }
        }

        /// Loopback answers every SYN at once, except when the listener's accept queue is full:
        /// then Linux drops the SYN and the connect hangs, like one to a silent host.
        @Test func connect_whenBacklogIsFull_timesOut() async throws {
            let listener = try TCPListener(host: "127.0.0.1", port: 0, backlog: 0)
            defer { listener.close() }
            let filler = try await TCPConnection.connect(host: "127.0.0.1", port: listener.port, timeout: .seconds(5))
            defer { filler.close() }
            let start = ContinuousClock.now
            await #expect(throws: TransportError.timedOut(operation: "connect to 127.0.0.1:\(listener.port)")) {
                _ = try await TCPConnection.connect(host: "127.0.0.1", port: listener.port, timeout: .milliseconds(300))
            }
            #expect(ContinuousClock.now - start >= .milliseconds(300))
        }

        @Test func close_wakesPendingRead_withClosedError() async throws {
            let (client, server, listener) = try await connectedPair()
            defer {
                client.close()
                listener.close()
            }
            let reader = Task { try await server.read() }
            #expect(await eventually { server.waitingReaderCount == 1 })
            server.close()
            await #expect(throws: TransportError.closed) { try await reader.value }
            await #expect(throws: TransportError.closed) { try await server.read() }
            await #expect(throws: TransportError.closed) { try await server.write([1]) }
        }

        @Test func close_wakesPendingWrite_withClosedError() async throws {
            let (client, server, listener) = try await connectedPair()
            defer {
                server.close()
                listener.close()
            }
            let writer = Task { try await client.write([UInt8](repeating: 0, count: 64 << 20)) }
            #expect(await eventually { client.bufferedByteCount > 0 })
            client.close()
            await #expect(throws: TransportError.closed) { try await writer.value }
            #expect(client.bufferedByteCount == 0)
        }

        @Test func connect_whenTaskIsCancelled_throwsCancellationError() async throws {
            let listener = try TCPListener(host: "127.0.0.1", port: 0, backlog: 0)
            defer { listener.close() }
            let filler = try await TCPConnection.connect(host: "127.0.0.1", port: listener.port)
            defer { filler.close() }
            let baseline = openDescriptorCount()
            let connect = Task {
                try await TCPConnection.connect(host: "127.0.0.1", port: listener.port, timeout: .seconds(30))
            }
            #expect(await eventually { openDescriptorCount() > baseline })  // the connect is under way
            connect.cancel()
            await #expect(throws: CancellationError.self) { _ = try await connect.value }
            #expect(await eventually { openDescriptorCount() <= baseline })
        }

        @Test func read_pastDeadline_timesOutAndConsumesNothing() async throws {
            let (client, server, listener) = try await connectedPair()
            defer {
                client.close()
                server.close()
                listener.close()
            }
            await #expect(throws: TransportError.timedOut(operation: "read from \(server.remoteAddress)")) {
                _ = try await server.read(deadline: .now + .milliseconds(50))
            }
            try await client.write([7, 8])
            #expect(try await server.readExactly(2, deadline: deadline()) == [7, 8])
        }

        @Test func read_whenTaskIsCancelled_throwsCancellationError() async throws {
            let (client, server, listener) = try await connectedPair()
            defer {
                client.close()
                server.close()
                listener.close()
            }
            let reader = Task { try await server.read() }
            #expect(await eventually { server.waitingReaderCount == 1 })
            reader.cancel()
            await #expect(throws: CancellationError.self) { try await reader.value }
            #expect(server.waitingReaderCount == 0)
        }

        @Test func readExactly_whenPeerClosesEarly_reportsWhatArrived() async throws {
            let (client, server, listener) = try await connectedPair()
            defer {
                server.close()
                listener.close()
            }
            try await client.write([1, 2, 3, 4])
            client.close()
            await #expect(throws: TransportError.endOfStream(expected: 10, received: 4)) {
                _ = try await server.readExactly(10, deadline: deadline())
            }
        }

        @Test func concurrentWrites_neverInterleave() async throws {
            let (client, server, listener) = try await connectedPair()
            defer {
                client.close()
                server.close()
                listener.close()
            }
            let block = 100_000
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 1...8 {
                    group.addTask {
                        try await client.write([UInt8](repeating: UInt8(writer), count: block), deadline: deadline())
                    }
                }
                let stream = try await server.readExactly(8 * block, deadline: deadline())
                try await group.waitForAll()
                var seen: Set<UInt8> = []
                for start in stride(from: 0, to: stream.count, by: block) {
                    let run = stream[start..<start + block]
                    #expect(run.allSatisfy { $0 == run.first }, "a write was split by another")
                    seen.insert(run.first!)
                }
                #expect(seen == Set(1...8))
            }
        }

        @Test func shutdownWrite_givesPeerEndOfStream_andKeepsReading() async throws {
            let (client, server, listener) = try await connectedPair()
            defer {
                client.close()
                server.close()
                listener.close()
            }
            try await client.write([1, 2])
            client.shutdownWrite()
            #expect(try await server.readExactly(2, deadline: deadline()) == [1, 2])
            #expect(try await server.read(deadline: deadline()) == [])
            try await server.write([9])
            #expect(try await client.read(deadline: deadline()) == [9])
            await #expect(throws: TransportError.closed) { try await client.write([3]) }
        }

        @Test func addresses_nameBothEnds() async throws {
            let (client, server, listener) = try await connectedPair()
            defer {
                client.close()
                server.close()
                listener.close()
            }
            #expect(listener.port != 0)
            #expect(client.remoteAddress == listener.localAddress)
            #expect(server.remoteAddress == client.localAddress)
            #expect(server.localAddress == listener.localAddress)
            #expect(client.localAddress.description == "127.0.0.1:\(client.localAddress.port)")
        }

        @Test func listen_onPortInUse_throwsAddressInUse() throws {
            let listener = try TCPListener(host: "127.0.0.1", port: 0)
            defer { listener.close() }
            #expect(throws: TransportError.addressInUse(host: "127.0.0.1", port: listener.port)) {
                _ = try TCPListener(host: "127.0.0.1", port: listener.port)
            }
        }

        @Test func listenerClose_endsConnectionsSequence() async throws {
            let listener = try TCPListener(host: "127.0.0.1", port: 0)
            let consumer = Task {
                var count = 0
                for try await connection in listener.connections {
                    count += 1
                    connection.close()
                }
                return count
            }
            for _ in 0..<3 {
                let client = try await TCPConnection.connect(host: "127.0.0.1", port: listener.port)
                #expect(try await client.read(deadline: deadline()) == [])  // the consumer closed it
                client.close()
            }
            listener.close()
            #expect(try await consumer.value == 3)
            await #expect(throws: TransportError.closed) { _ = try await listener.accept() }
        }

        @Test func connect_byLocalhostName_works() async throws {
            let listener = try TCPListener(host: "localhost", port: 0)
            defer { listener.close() }
            #expect(listener.localAddress.host == "127.0.0.1")
            let client = try await TCPConnection.connect(host: "localhost", port: listener.port)
            client.close()
        }

        @Test(.enabled(if: ipv6LoopbackAvailable(), "no IPv6 loopback address on this machine"))
        func ipv6Loopback_roundTrip() async throws {
            let listener = try TCPListener(host: "::1", port: 0)
            defer { listener.close() }
            async let accepted = listener.accept(deadline: deadline())
            let client = try await TCPConnection.connect(host: "[::1]", port: listener.port)
            let server = try await accepted
            defer {
                client.close()
                server.close()
            }
            #expect(client.remoteAddress.description == "[::1]:\(listener.port)")
            #expect(server.remoteAddress.family == .ipv6)
            try await client.write([42])
            #expect(try await server.read(deadline: deadline()) == [42])
        }
    }
}
