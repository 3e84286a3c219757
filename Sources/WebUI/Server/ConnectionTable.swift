import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The open connections of one `HTTPServer`, for the two rules libmicrohttpd cannot keep itself.
///
/// - **A connection without the token lives at most `headerTimeout`** (5 s) from its accept.
///   The library's own timeout is an idle timeout: a client that sends a header byte every few
///   seconds would hold its connection (and its slot) for ever. A connection whose request shows
///   the token is exempt from then on (it may keep alive, stream events, upload slowly); every
///   other request is answered with `Connection: close`, so the deadline covers a connection's
///   whole life. `sweep` shuts down the sockets past it; the library then reads the end and
///   closes the connection.
/// - **Slots are kept for the local user.** Connections from any address but 127.0.0.1 count
///   against `othersLimit`, which is the total cap less one address's cap: whoever fills every
///   other slot from other addresses (other loopback addresses, or the LAN with
///   `--web-allow-remote`), the user's own browser and `curl` on 127.0.0.1 still get in.
///
/// Every method takes the lock (`state`): the library's thread opens, closes and checks
/// connections, a task sweeps.
final class ConnectionTable: Sendable {
    /// 127.0.0.1 in network byte order: where a browser on this machine comes from.
    static let localUser = in_addr_t(0x7f00_0001).bigEndian

    /// What `startRequest` says about a request whose headers are in.
    enum Start: Equatable {
        /// In time; the connection's requests so far, this one included.
        case inTime(requests: UInt)
        /// The connection is past its deadline (a sweep is due): refuse it.
        case late
    }

    private final class Record {
        let socket: Int32
        let isLocalUser: Bool
        let opened: ContinuousClock.Instant
        var trusted = false
        var requests: UInt = 0
        var shutDown = false

        init(socket: Int32, isLocalUser: Bool, opened: ContinuousClock.Instant) {
            self.socket = socket
            self.isLocalUser = isLocalUser
            self.opened = opened
        }
    }

    let headerTimeout: Duration
    let othersLimit: Int
    private struct State {
        /// By the connection handle's address.
        var records: [Int: Record] = [:]
        var othersOpen = 0
        var shutDownCount = 0
    }
    private let state = Mutex(State())

    init(headerTimeout: Duration, othersLimit: Int) {
        self.headerTimeout = headerTimeout
        self.othersLimit = othersLimit
    }

    /// Whether a new connection from `address` (network byte order) may be accepted.
    func mayAccept(address: in_addr_t) -> Bool {
        address == Self.localUser || state.withLock { $0.othersOpen < othersLimit }
    }

    func opened(_ connection: OpaquePointer, socket: Int32, address: in_addr_t, at now: ContinuousClock.Instant = .now) {
        state.withLock { state in
            let record = Record(socket: socket, isLocalUser: address == Self.localUser, opened: now)
            state.records[Int(bitPattern: connection)] = record
            if !record.isLocalUser { state.othersOpen += 1 }
        }
    }

    /// The library calls this before it closes the socket, so `sweep` (under the same lock)
    /// never shuts down a descriptor that another connection has reused.
    func closed(_ connection: OpaquePointer) {
        state.withLock { state in
            guard let record = state.records.removeValue(forKey: Int(bitPattern: connection)) else { return }
            if !record.isLocalUser { state.othersOpen -= 1 }
        }
    }

    /// A request's headers are in: counts it, unless the connection is past its deadline.
    func startRequest(on connection: OpaquePointer, at now: ContinuousClock.Instant = .now) -> Start {
        state.withLock { state in
            guard let record = state.records[Int(bitPattern: connection)] else { return .inTime(requests: 0) }
            if !record.trusted && (record.shutDown || now - record.opened > headerTimeout) { return .late }
            record.requests += 1
            return .inTime(requests: record.requests)
        }
    }

    /// The connection's request showed the token: no deadline from now on.
    func trust(_ connection: OpaquePointer) {
        state.withLock { $0.records[Int(bitPattern: connection)]?.trusted = true }
    }

    /// Shuts down every untrusted connection older than `headerTimeout`; returns how many.
    @discardableResult
    func sweep(at now: ContinuousClock.Instant = .now) -> Int {
        state.withLock { state in
            var count = 0
            for record in state.records.values where !record.trusted && !record.shutDown && now - record.opened > headerTimeout {
                record.shutDown = true
                if record.socket >= 0 { shutdown(record.socket, Int32(SHUT_RDWR)) }
                count += 1
            }
            state.shutDownCount += count
            return count
        }
    }

    /// Open connections: all, and those not from 127.0.0.1.
    var open: (all: Int, others: Int) { state.withLock { ($0.records.count, $0.othersOpen) } }

    /// Connections shut down at the deadline since the start.
    var closedAtDeadline: Int { state.withLock { $0.shutDownCount } }
}
