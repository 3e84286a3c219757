/// When a link pings and when it gives up on a silent peer (docs/DESIGN.md §4.2: ping 15 s, idle close
/// 45 s), as a pure state machine the link's timer drives. Times are milliseconds.
///
/// Every `pingInterval` the link sends a PING, whatever else flows: the peer's Discovery counts
/// pings as the link's liveness evidence. Anything received (a frame of any type) proves the
/// peer alive; nothing for `idleTimeout` closes the link.
public struct Keepalive: Sendable {
    /// What the timer should do now.
    public enum Action: Sendable, Equatable {
        /// Send a PING with this nonce.
        case ping(nonce: UInt64)
        /// The peer has been silent for the idle timeout: close the link.
        case closeIdle
    }

    public let pingInterval: UInt64
    public let idleTimeout: UInt64
    public private(set) var lastReceived: UInt64
    private var nextPing: UInt64
    private var nonce: UInt64

    public init(pingInterval: UInt64, idleTimeout: UInt64, now: UInt64, firstNonce: UInt64 = 1) {
        precondition(pingInterval > 0 && idleTimeout > 0, "keepalive intervals must be positive")
        self.pingInterval = pingInterval
        self.idleTimeout = idleTimeout
        lastReceived = now
        nextPing = now + pingInterval
        nonce = firstNonce
    }

    /// The next time `onTick` has something to do.
    public var deadline: UInt64 { min(nextPing, lastReceived + idleTimeout) }

    /// A frame arrived from the peer.
    public mutating func onReceived(now: UInt64) {
        lastReceived = max(lastReceived, now)
    }

    /// The timer fired at `now`: the actions due, in order.
    public mutating func onTick(now: UInt64) -> [Action] {
        if now >= lastReceived + idleTimeout { return [.closeIdle] }
        guard now >= nextPing else { return [] }
        nextPing = now + pingInterval
        defer { nonce &+= 1 }
        return [.ping(nonce: nonce)]
    }
}
