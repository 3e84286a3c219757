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
        for clock in clocks {
            let before = UInt64(Date().timeIntervalSince1970 * 1_000)
            let stamped = clock.wallMillisNow()
            let after = UInt64(Date().timeIntervalSince1970 * 1_000)
            #expect(before <= stamped && stamped <= after, "\(stamped) outside [\(before), \(after)]")
            if !(before <= stamped && stamped <= after) { return }
        }
    }

    @Test func wallMillisAt_convertsMonotonicMillisFromTheStart() {
        let clock = NodeClock()
        let start = clock.wallMillis(at: 0)
        #expect(clock.wallMillis(at: 1_500) == start + 1_500)
        #expect(clock.now() < 60_000)
    }
}
