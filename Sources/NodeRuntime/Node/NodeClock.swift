import Foundation

/// The node's time: monotonic milliseconds for the pure instances (Discovery, Keepalive,
/// Admission), and their conversion to wall-clock time for people and JSON.
///
/// Monotonic time never jumps when the system clock is set, so timers and liveness stay right;
/// wall time is only derived for display (`since`, `last_seen`), from one reading at start.
public struct NodeClock: Sendable {
    private let origin: ContinuousClock.Instant
    /// Unix microseconds at `origin`: whole milliseconds here would put each node's stamps up to
    /// a millisecond off the others' (the remainder each process dropped at its start).
    private let wallOriginMicros: UInt64
    private var wallOriginMillis: UInt64 { wallOriginMicros / 1_000 }

    /// A clock whose zero is now.
    public init() {
        origin = .now
        wallOriginMicros = UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000))
    }

    /// Milliseconds since the clock was made.
    public func now() -> UInt64 {
        Self.milliseconds(ContinuousClock.now - origin)
    }

    /// The instant of monotonic millisecond `millis`.
    public func instant(at millis: UInt64) -> ContinuousClock.Instant {
        origin + .milliseconds(Int64(clamping: millis))
    }

    /// Unix milliseconds now, to the microsecond before truncating: two nodes' stamps of the same
    /// instant are equal (ops' `received_at`, from which the benchmark measures latency).
    public func wallMillisNow() -> UInt64 {
        let (seconds, attoseconds) = (ContinuousClock.now - origin).components
        let micros = UInt64(max(0, seconds)) * 1_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000_000)
        return (wallOriginMicros + micros) / 1_000
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
