import Glibc
import TestSupport
import Testing

@testable import Transport

extension TransportTests {
    @Suite("UDP")
    struct UDPTests {
        /// The next datagram carrying `bytes`: another test run on this host may share the port.
        func receive(_ bytes: [UInt8], on socket: UDPSocket) async throws -> Datagram {
            let end = deadline()
            while true {
                let datagram = try await socket.receive(deadline: end)
                if datagram.bytes == bytes { return datagram }
            }
        }

        @Test func loopbackBroadcast_reachesEverySocketSharingThePort() async throws {
            let port = udpTestPort(0)
            let first = try UDPSocket(host: "0.0.0.0", port: port)
            let second = try UDPSocket(host: "0.0.0.0", port: port)
            let sender = try UDPSocket(host: "0.0.0.0", port: 0)
            defer {
                first.close()
                second.close()
                sender.close()
            }
            var generator = SeededRandom(seed: UInt64(getpid()))
            let beacon = randomBytes(96, using: &generator)
            try await sender.send(beacon, to: "127.255.255.255", port: port)
            for socket in [first, second] {
                let datagram = try await receive(beacon, on: socket)
                #expect(datagram.source.host == "127.0.0.1")
                #expect(datagram.source.port == sender.localAddress.port)
            }
        }

        @Test func oversizedDatagram_isDroppedAndCounted() async throws {
            let receiver = try UDPSocket(host: "127.0.0.1", port: 0)
            let sender = try UDPSocket(host: "127.0.0.1", port: 0)
            defer {
                receiver.close()
                sender.close()
            }
            // UDPSocket refuses to send it, so the oversized one goes out through the kernel directly.
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            defer { close(fd) }
            let big = [UInt8](repeating: 0xEE, count: UDPSocket.maxDatagramSize + 500)
            let sent = receiver.localAddress.withSockAddr { address, length in
                big.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, 0, address, length) }
            }
            #expect(sent == big.count)
            try await sender.send([1, 2, 3], to: receiver.localAddress)
            let datagram = try await receiver.receive(deadline: deadline())
            #expect(datagram.bytes == [1, 2, 3])
            #expect(datagram.source == sender.localAddress)
            #expect(receiver.oversizedDatagramCount == 1)
        }

        @Test func send_overMaximum_isRefused() async throws {
            let sender = try UDPSocket(host: "127.0.0.1", port: 0)
            defer { sender.close() }
            let size = UDPSocket.maxDatagramSize + 1
            await #expect(throws: TransportError.datagramTooLarge(size: size, limit: UDPSocket.maxDatagramSize)) {
                try await sender.send([UInt8](repeating: 0, count: size), to: sender.localAddress)
            }
        }

        @Test func broadcast_withoutPermission_isDenied() async throws {
            let sender = try UDPSocket(host: "0.0.0.0", port: 0, broadcast: false)
            defer { sender.close() }
            await #expect(
                throws: TransportError.permissionDenied(
                    operation: "sendto 127.255.255.255:\(udpTestPort(1))", errno: EACCES)
            ) {
                try await sender.send([1], to: "127.255.255.255", port: udpTestPort(1))
            }
        }

        @Test func close_endsDatagramsSequence_andWakesReceiver() async throws {
            let socket = try UDPSocket(host: "127.0.0.1", port: 0)
            let taken = Counter()
            let consumer = Task {
                for try await _ in socket.datagrams { taken.add(1) }
            }
            let sender = try UDPSocket(host: "127.0.0.1", port: 0)
            defer { sender.close() }
            try await sender.send([1], to: socket.localAddress)
            try await sender.send([2], to: socket.localAddress)
            #expect(await eventually { taken.current == 2 })
            socket.close()  // the consumer is parked for a third: close must end its loop
            try await consumer.value
            #expect(taken.current == 2)
        }

        @Test func receive_pastDeadline_timesOut() async throws {
            let socket = try UDPSocket(host: "127.0.0.1", port: 0)
            defer { socket.close() }
            await #expect(throws: TransportError.timedOut(operation: "receive on \(socket.localAddress)")) {
                _ = try await socket.receive(deadline: .now + .milliseconds(50))
            }
        }
    }
}
