import Replica
import Testing

@Suite struct HybridClockTests {
    @Test func tick_followsTheWallClock_andNeverGoesBack() {
        var clock = HybridClock()
        let a = clock.tick(nowMillis: 1_000)
        let b = clock.tick(nowMillis: 1_000)
        let c = clock.tick(nowMillis: 900)  // wall clock stepped back
        let d = clock.tick(nowMillis: 2_000)
        #expect(a == HLC(wallMillis: 1_000, counter: 0))
        #expect(b == HLC(wallMillis: 1_000, counter: 1))
        #expect(c == HLC(wallMillis: 1_000, counter: 2))
        #expect(d == HLC(wallMillis: 2_000, counter: 0))
    }

    @Test func counterOverflow_borrowsTheNextMillisecond() {
        var clock = HybridClock(last: HLC(wallMillis: 5, counter: UInt16.max))
        #expect(clock.tick(nowMillis: 5) == HLC(wallMillis: 6, counter: 0))
    }

    @Test func observe_pullsForward_atMostSixtySecondsPastTheWallClock() {
        var clock = HybridClock()
        clock.observe(HLC(wallMillis: 10_000, counter: 3), nowMillis: 5_000)
        #expect(clock.last == HLC(wallMillis: 10_000, counter: 3))
        clock.observe(HLC(wallMillis: 10_000_000, counter: 0), nowMillis: 5_000)
        #expect(clock.last.wallMillis == 5_000 + HybridClock.maxDriftMillis)
        let next = clock.tick(nowMillis: 5_000)
        #expect(next > clock.last || next == clock.last)
        #expect(next.wallMillis <= 5_000 + HybridClock.maxDriftMillis + 1)
    }

    @Test func observe_ofAnOlderTimestamp_changesNothing() {
        var clock = HybridClock(last: HLC(wallMillis: 50, counter: 0))
        clock.observe(HLC(wallMillis: 10, counter: 9), nowMillis: 60)
        #expect(clock.last == HLC(wallMillis: 50, counter: 0))
    }
}
