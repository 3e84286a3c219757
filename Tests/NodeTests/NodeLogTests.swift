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

    @Test func journalLines_carryTheSyslogPriority_andNoStamp() {
        let lines = Mutex<[String]>([])
        let log = NodeLog(level: .debug, format: .journal, sink: { line in lines.withLock { $0.append(line) } })
        log.debug("d")
        log.info("i")
        log.warn("w")
        log.error("e")
        #expect(lines.withLock { $0 } == ["<7>d", "<6>i", "<4>w", "<3>e"])
    }

    /// `JOURNAL_STREAM` counts only while it names the descriptor's own device and inode.
    @Test func journalFormat_isDetectedFromTheStreamsDeviceAndInode() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("parley-journal-\(UUID().uuidString)").path
        let descriptor = open(path, O_CREAT | O_WRONLY, 0o600)
        try #require(descriptor >= 0)
        defer {
            close(descriptor)
            unlink(path)
        }
        var info = stat()
        try #require(fstat(descriptor, &info) == 0)
        let stream = "\(info.st_dev):\(info.st_ino)"
        #expect(NodeLog.Format.detect(environment: ["JOURNAL_STREAM": stream], descriptor: descriptor) == .journal)
        #expect(NodeLog.Format.detect(environment: ["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino + 1)"], descriptor: descriptor) == .plain)
        #expect(NodeLog.Format.detect(environment: ["JOURNAL_STREAM": "garbage"], descriptor: descriptor) == .plain)
        #expect(NodeLog.Format.detect(environment: [:], descriptor: descriptor) == .plain)
    }
}

/// `LogLimiter` with a manual clock: what the network can make a node log is bounded per window.
@Suite struct LogLimiterTests {
    @Test func aKind_isWrittenUpToItsLimit_thenCounted_andSummarizedWhenTheWindowCloses() {
        var limiter = LogLimiter(linesPerKind: 3, linesInAll: 10, windowMillis: 10_000)
        let written = (0..<100).map { limiter.admit(.duplicateIdentity, level: .warn, now: UInt64($0) * 10).write }
        #expect(written.count { $0 } == 3)
        #expect(written.prefix(3).allSatisfy { $0 })
        // Not before the window's end; then once.
        #expect(limiter.closeWindow(now: 9_999) == nil)
        let summary = limiter.closeWindow(now: 10_400)
        #expect(summary == LogLimiter.Summary(level: .warn, suppressed: [(.duplicateIdentity, 97)], millis: 10_000))
        #expect(summary?.text == "… 97 more lines in the last 10 s, not shown: 97 'duplicate identity'")
        #expect(limiter.closeWindow(now: 20_000) == nil)
        // The next line opens a new window with the full allowance.
        #expect(limiter.admit(.duplicateIdentity, level: .warn, now: 30_000).write)
    }

    @Test func allKindsTogether_areCapped_andOneSummaryCountsEachKind_mostFirst() {
        var limiter = LogLimiter(linesPerKind: 5, linesInAll: 8, windowMillis: 1_000)
        var writes = 0
        for index in 0..<30 {
            let kind: LogKind = index % 3 == 0 ? .linked : index % 3 == 1 ? .unlinked : .storeFailed
            if limiter.admit(kind, level: kind == .storeFailed ? .error : .info, now: UInt64(index)).write { writes += 1 }
        }
        #expect(writes == 8)
        // The summary comes first with the next line after the window, at the most severe level left out.
        let (summary, write) = limiter.admit(.linked, level: .info, now: 5_000)
        #expect(write)
        #expect(summary?.level == .error)
        #expect(summary?.suppressed.map(\.count) == [8, 7, 7])
        #expect(summary?.text == "… 22 more lines in the last 1 s, not shown: 8 'store failed', 7 'linked', 7 'unlinked'")
    }

    @Test func aWindowWithNothingLeftOut_hasNoSummary_andStoppingSummarizesAnOpenWindow() {
        var limiter = LogLimiter(linesPerKind: 2, linesInAll: 10, windowMillis: 1_000)
        _ = limiter.admit(.linked, level: .info, now: 0)
        #expect(limiter.closeWindow(now: 2_000) == nil)
        for now in UInt64(3_000)..<3_005 { _ = limiter.admit(.banned, level: .warn, now: now) }
        #expect(limiter.closeWindow(now: 3_010) == nil)
        #expect(limiter.closeWindow(now: 3_010, all: true)?.text == "… 3 more lines in the last 1 s, not shown: 3 'banned'")
    }

    @Test func nodeLog_limitsKindsOnly_evaluatesNoSuppressedMessage_andWritesTheSummary() {
        let lines = Mutex<[String]>([])
        let clock = Mutex<UInt64>(0)
        let evaluated = Mutex(0)
        let log = NodeLog(
            level: .info, limits: LogLimiter(linesPerKind: 2, linesInAll: 10, windowMillis: 10_000),
            sink: { line in lines.withLock { $0.append(line) } }, now: { clock.withLock { $0 } })
        func message(_ text: String) -> String {
            evaluated.withLock { $0 += 1 }
            return text
        }
        for index in 0..<1_000 { log.warn(.duplicateIdentity, message("duplicate \(index)")) }
        for index in 0..<5 { log.info("local \(index)") }  // no kind: never limited
        log.debug(.linked, "below the level: not counted")
        #expect(evaluated.withLock { $0 } == 2)
        clock.withLock { $0 = 10_000 }
        log.writeSummaries()
        let written = lines.withLock { $0 }.map { String($0.dropFirst(25)) }
        #expect(
            written == [
                "warn  duplicate 0", "warn  duplicate 1", "info  local 0", "info  local 1", "info  local 2", "info  local 3",
                "info  local 4", "warn  … 998 more lines in the last 10 s, not shown: 998 'duplicate identity'",
            ], "\(written)")
    }
}
