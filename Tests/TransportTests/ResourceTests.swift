import Testing

@testable import Transport

extension TransportTests {
    @Suite("Resources")
    struct ResourceTests {
        /// Tests of other modules run alongside in a full `swift test` and may hold a few dozen
        /// files (SQLite stores) at a time; a leak here shows as hundreds to thousands: every
        /// cycle below opens at least two descriptors.
        static let descriptorSlack = 64

        @Test func thousandConnectCloseCycles_leakNoDescriptors() async throws {
            let listener = try TCPListener(host: "127.0.0.1", port: 0)
            defer { listener.close() }
            let baseline = openDescriptorCount()
            for _ in 0..<1_000 {
                async let accepted = listener.accept(deadline: deadline())
                let client = try await TCPConnection.connect(host: "127.0.0.1", port: listener.port)
                let server = try await accepted
                try await client.write([1])
                #expect(try await server.read(deadline: deadline()) == [1])
                client.close()
                server.close()
            }
            #expect(
                await eventually { openDescriptorCount() <= baseline + Self.descriptorSlack },
                "descriptors: \(baseline) before, \(openDescriptorCount()) after")
        }

        @Test func failedConnectsAndDroppedObjects_leakNoDescriptors() async throws {
            let closed = try TCPListener(host: "127.0.0.1", port: 0)
            let closedPort = closed.port
            closed.close()
            let listener = try TCPListener(host: "127.0.0.1", port: 0)
            defer { listener.close() }
            let baseline = openDescriptorCount()
            for _ in 0..<200 {
                await #expect(throws: TransportError.self) {
                    _ = try await TCPConnection.connect(host: "127.0.0.1", port: closedPort)
                }
                // Never closed explicitly: `deinit` must release them.
                async let accepted = listener.accept(deadline: deadline())
                _ = try await TCPConnection.connect(host: "127.0.0.1", port: listener.port)
                _ = try await accepted
                _ = try UDPSocket(host: "127.0.0.1", port: 0)
                _ = try TCPListener(host: "127.0.0.1", port: 0)
            }
            #expect(
                await eventually { openDescriptorCount() <= baseline + Self.descriptorSlack },
                "descriptors: \(baseline) before, \(openDescriptorCount()) after")
        }

        @Test func idleLoop_sleepsWhileAReadWaits() async throws {
            let loop = EventLoop()
            let (client, server, listener) = try await connectedPair(loop: loop)
            defer { listener.close() }
            let reader = Task { try await server.read() }
            #expect(await eventually { server.waitingReaderCount == 1 })
            let windows = try await wakeUps(of: loop)
            #expect(windows.contains { $0 <= 2 }, "the event loop woke \(windows) times in 500 ms windows of idleness")
            client.close()
            #expect(try await reader.value == [])
            server.close()
        }

        /// `loop`'s wake-ups in up to three windows of 500 ms, ending at the first with at most
        /// two. Idleness is the absence of events, which only elapsed time can show. The tests
        /// give their sockets a loop of their own: the shared one also carries the traffic of
        /// every test running in parallel in this process (NodeTests run nodes in process). A
        /// spinning loop fails every window; a stray wake-up (a timer of the pair's) only some.
        private func wakeUps(of loop: EventLoop) async throws -> [UInt64] {
            var windows: [UInt64] = []
            for _ in 0..<3 {
                let before = loop.iterationCount
                // A window is inherent: the test measures idleness (wake-ups over elapsed time).
                try await Task.sleep(for: .milliseconds(500))
                windows.append(loop.iterationCount - before)
                if windows.last! <= 2 { break }
            }
            return windows
        }

        /// Bytes that arrive while no read waits keep the loop asleep: the kernel, told once
        /// that they are not wanted, stops reporting them (the epoll set is level-triggered, and
        /// a narrowed interest reaches it only then). A read that starts later still gets them.
        @Test func unreadBytes_withNoReadWaiting_letTheLoopSleep_andTheNextReadGetsThem() async throws {
            let loop = EventLoop()
            let (client, server, listener) = try await connectedPair(loop: loop)
            defer { listener.close() }
            try await client.write([1])
            #expect(try await server.read() == [1])
            try await client.write([2])
            let windows = try await wakeUps(of: loop)
            #expect(windows.contains { $0 <= 2 }, "the event loop woke \(windows) times in 500 ms windows with unread bytes")
            #expect(try await server.read(deadline: deadline()) == [2])
            client.close()
            server.close()
        }
    }
}
