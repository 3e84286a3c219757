import Glibc

/// A fixed amount of CPU work (integer arithmetic on registers, no memory traffic or system calls),
/// counted in loop iterations: the floor at Parley's CPU spends it as a stand-in for Parley's
/// extra work, and the host probe times it to see how fast the machine runs right now.
enum SpinWork {
    /// Runs `iterations` of the loop. Its result goes to an opaque sink so it cannot be dropped.
    static func run(iterations: Int) {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<max(iterations, 0) {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            state ^= state >> 17
        }
        sink(state)
    }

    /// Iterations per nanosecond at full speed: the fastest of 30 timed runs of 100,000
    /// (about 0.1 ms each), so a run the host slowed does not count.
    static func iterationsPerNano() -> Double {
        let iterations = 100_000
        var fastest = UInt64.max
        for _ in 0..<30 {
            let before = threadCPUNanos()
            run(iterations: iterations)
            fastest = min(fastest, max(threadCPUNanos() - before, 1))
        }
        return Double(iterations) / Double(fastest)
    }

    /// This thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), nanoseconds.
    static func threadCPUNanos() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    @inline(never)
    private static func sink(_ value: UInt64) {
        if value == 1 { print("", terminator: "") }
    }
}
