import Foundation

/// The node's time: monotonic milliseconds for the pure instances (Discovery, Keepalive,
/// Admission), and their conversion to wall-clock time for people and JSON.
///
/// Monotonic time never jumps when the system clock is set, so timers and liveness stay right;
/// wall time is only derived for display (`since`, `last_seen`), from one reading at start.
public struct NodeClock: Sendable {
    private let origin: ContinuousClock.Instant
    private let wallOriginMillis: UInt64

    /// A clock whose zero is now.
    public init() {
        origin = .now
        wallOriginMillis = UInt64(max(0, Date().timeIntervalSince1970 * 1000))
    }

    /// Milliseconds since the clock was made.
    public func now() -> UInt64 {
        Self.milliseconds(ContinuousClock.now - origin)
    }

    /// The instant of monotonic millisecond `millis`.
    public func instant(at millis: UInt64) -> ContinuousClock.Instant {
        origin + .milliseconds(Int64(clamping: millis))
    }

    /// Unix milliseconds of monotonic millisecond `millis`.
    public func wallMillis(at millis: UInt64) -> UInt64 {
        wallOriginMillis + millis
    }

    /// Whole milliseconds in `duration` (negative durations are 0).
    static func milliseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        return UInt64(seconds) * 1_000 + UInt64(attoseconds / 1_000_000_000_000_000)
    }
}
