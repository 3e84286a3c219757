import Foundation

/// The node's time: monotonic milliseconds for the pure instances (Discovery, Keepalive,
/// Admission), and their conversion to wall-clock time for people and JSON.
///
/// Monotonic time never jumps when the system clock is set, so timers and liveness stay right;
/// wall time is only derived for display (`since`, `last_seen`), from one reading at start.
public struct NodeClock: Sendable {
    /// `CLOCK_BOOTTIME` nanoseconds at the clock's zero. Read directly, not through
    /// `ContinuousClock`: the node reads the clock several times for every op, and its
    /// `Duration`s' 128-bit arithmetic cost a write about 3,400 instructions.
    private let originNanos: UInt64
    /// Unix microseconds at `originNanos`: whole milliseconds here would put each node's stamps up to
    /// a millisecond off the others' (the remainder each process dropped at its start).
    private let wallOriginMicros: UInt64
    private var wallOriginMillis: UInt64 { wallOriginMicros / 1_000 }

    /// A clock whose zero is now.
    public init() {
        originNanos = Self.bootNanos()
        wallOriginMicros = UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000))
    }

    /// Milliseconds since the clock was made.
    public func now() -> UInt64 {
        elapsedNanos() / 1_000_000
    }

    /// The instant of monotonic millisecond `millis`, for the deadlines of reads and sleeps.
    public func instant(at millis: UInt64) -> ContinuousClock.Instant {
        let target = Int64(clamping: millis) &* 1_000_000
        return .now + .nanoseconds(target &- Int64(clamping: elapsedNanos()))
    }

    /// Unix milliseconds now, to the microsecond before truncating: two nodes' stamps of the same
    /// instant are equal (ops' `received_at`, from which the benchmark measures latency).
    public func wallMillisNow() -> UInt64 {
        wallMicrosNow() / 1_000
    }

    /// Unix microseconds now (ops' `received_at`).
    public func wallMicrosNow() -> UInt64 {
        wallOriginMicros + elapsedNanos() / 1_000
    }

    private func elapsedNanos() -> UInt64 {
        let now = Self.bootNanos()
        return now > originNanos ? now - originNanos : 0
    }

    /// Monotonic nanoseconds that also count time the system was suspended (as `ContinuousClock`).
    private static func bootNanos() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_BOOTTIME, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
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
