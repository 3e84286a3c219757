import Foundation
import Testing

@testable import WebUI

#if canImport(Glibc)
    import Glibc
#endif

/// The connection rules libmicrohttpd cannot keep itself, in process: the deadline of a
/// connection without the token, and the slots kept for 127.0.0.1.
@Suite struct ConnectionTableTests {
    static func connection(_ number: Int) -> OpaquePointer { OpaquePointer(bitPattern: number * 16)! }
    static let other = inet_addr("127.0.0.9")

    @Test func othersShareTheirLimit_and127001AlwaysGetsIn() {
        let table = ConnectionTable(headerTimeout: .seconds(5), othersLimit: 2)
        #expect(table.mayAccept(address: Self.other))
        table.opened(Self.connection(1), socket: -1, address: Self.other)
        table.opened(Self.connection(2), socket: -1, address: inet_addr("10.0.0.7"))
        #expect(!table.mayAccept(address: Self.other))
        #expect(table.mayAccept(address: ConnectionTable.localUser))
        table.opened(Self.connection(3), socket: -1, address: ConnectionTable.localUser)
        #expect(table.open == (3, 2))
        table.closed(Self.connection(2))
        #expect(table.mayAccept(address: Self.other))
        #expect(ConnectionTable.localUser == inet_addr("127.0.0.1"))
    }

    @Test func aConnectionWithoutTheToken_isShutDownAtTheDeadline_oneWithItIsNot() {
        let table = ConnectionTable(headerTimeout: .seconds(5), othersLimit: 10)
        let start = ContinuousClock.now
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }
        table.opened(Self.connection(1), socket: pair[0], address: Self.other, at: start)
        table.opened(Self.connection(2), socket: -1, address: Self.other, at: start)
        #expect(table.startRequest(on: Self.connection(2), at: start + .seconds(1)) == .inTime(requests: 1))
        table.trust(Self.connection(2))
        #expect(table.sweep(at: start + .seconds(4)) == 0)
        #expect(table.startRequest(on: Self.connection(1), at: start + .seconds(4)) == .inTime(requests: 1))
        #expect(table.sweep(at: start + .seconds(6)) == 1)
        // The socket was shut down: its peer reads the end.
        var byte: UInt8 = 0
        #expect(recv(pair[1], &byte, 1, Int32(MSG_DONTWAIT)) == 0)
        #expect(table.startRequest(on: Self.connection(1), at: start + .seconds(6)) == .late)
        #expect(table.startRequest(on: Self.connection(2), at: start + .seconds(60)) == .inTime(requests: 2))
        #expect(table.sweep(at: start + .seconds(60)) == 0 && table.closedAtDeadline == 1)
    }
}
