import Foundation
import Synchronization
import Testing

@testable import NodeRuntime

@Suite struct NodeLogTests {
    @Test func stamp_isUTCWithMilliseconds() {
        // 2026-03-04T05:06:07.089Z: every field padded, the nanoseconds truncated to ms.
        #expect(NodeLog.stamp(timespec(tv_sec: 1_772_600_767, tv_nsec: 89_999_999)) == "2026-03-04T05:06:07.089Z")
        #expect(NodeLog.stamp(timespec(tv_sec: 0, tv_nsec: 0)) == "1970-01-01T00:00:00.000Z")
    }

    @Test func stamp_withoutATime_isNow() throws {
        let before = Date()
        let text = NodeLog.stamp()
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let parsed = try #require(formatter.date(from: text), "\(text) is not an ISO 8601 time")
        #expect(abs(parsed.timeIntervalSince(before)) < 5)
    }

    @Test func lines_carryTheStampTheLevelPaddedAndTheMessage_atOrAboveTheLevel() {
        let lines = Mutex<[String]>([])
        let log = NodeLog(level: .info, sink: { line in lines.withLock { $0.append(line) } })
        log.debug("hidden")
        log.info("linked to ada#abcd")
        log.error("gone")
        let written = lines.withLock { $0 }
        #expect(written.count == 2)
        #expect(written.first?.dropFirst(24).hasPrefix(" info  linked to ada#abcd") == true, "\(written)")
        #expect(written.last?.dropFirst(24).hasPrefix(" error gone") == true, "\(written)")
    }
}
