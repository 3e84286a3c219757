import Foundation
import NodeRuntime
import Testing

@Suite struct NodeClockTests {
    /// Each node stamps ops' `received_at` with its own clock, and the benchmark subtracts one
    /// node's stamp from another's: a clock that dropped the sub-millisecond part of its start
    /// would be up to a millisecond behind the wall clock, differently in every process.
    @Test func wallMillisNow_isTheWallClockTruncated_forEveryClock() {
        // Clocks started at scattered sub-millisecond phases, read a few milliseconds later.
        var clocks: [NodeClock] = []
        for _ in 0..<200 {
            clocks.append(NodeClock())
            usleep(37)
        }
        // A stamp may miss by a microsecond or two (the two clocks are read apart, and each is
        // truncated to microseconds), which shows only when a millisecond starts in between:
        // a few clocks in 200. A clock that dropped its start's sub-millisecond part is behind
        // by a random fraction of a millisecond: about half of them miss.
        var misses: [String] = []
        for clock in clocks {
            let before = UInt64(Date().timeIntervalSince1970 * 1_000)
            let stamped = clock.wallMillisNow()
            let after = UInt64(Date().timeIntervalSince1970 * 1_000)
            if !(before <= stamped && stamped <= after) { misses.append("\(stamped) outside [\(before), \(after)]") }
        }
        #expect(misses.count < 20, "\(misses.count) of 200 clocks missed the wall clock: \(misses.prefix(3))")
    }

    /// A deadline in the clock's milliseconds is that far ahead on `ContinuousClock`, which reads
    /// and sleeps wait on: between the readings around it, however far apart they are.
    @Test func instantAt_isAsFarAheadAsTheMillisecondsSay() {
        let clock = NodeClock()
        for _ in 0..<100 {
            let before = ContinuousClock.now
            let deadline = clock.instant(at: clock.now() + 500)
            let after = ContinuousClock.now
            #expect(before + .milliseconds(498) <= deadline && deadline <= after + .milliseconds(500))
            usleep(97)
        }
    }

    @Test func wallMillisAt_convertsMonotonicMillisFromTheStart() {
        let clock = NodeClock()
        let start = clock.wallMillis(at: 0)
        #expect(clock.wallMillis(at: 1_500) == start + 1_500)
        #expect(clock.now() < 60_000)
    }
}
