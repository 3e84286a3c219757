import SecureLink
import Sodium
import Testing

@Suite struct FrameStallDetectorTests {
    let key = streamKey()

    @Test func partialFrame_pendingFor30Seconds_isStalled() throws {
        let stream = try encodeStream([[UInt8](repeating: 1, count: 100)], key: key)
        var decoder = FrameDecoder(key: key)
        var detector = FrameStallDetector()
        decoder.feed(stream.header + stream.frames[0].prefix(10))
        #expect(try decoder.next() == nil)
        #expect(detector.check(decoder.pendingFrame, now: 1_000) == .receiving(since: 1_000))
        #expect(detector.deadline == 31_000)
        #expect(detector.check(decoder.pendingFrame, now: 30_999) == .receiving(since: 1_000))
        #expect(detector.check(decoder.pendingFrame, now: 31_000) == .stalled(since: 1_000))
    }

    @Test func slowButSteadyBytes_ofOneFrame_stillStall() throws {
        let stream = try encodeStream([[UInt8](repeating: 1, count: 100)], key: key)
        var decoder = FrameDecoder(key: key)
        var detector = FrameStallDetector()
        decoder.feed(stream.header)
        _ = try decoder.next()
        for (second, byte) in stream.frames[0].prefix(40).enumerated() {  // a slow loris: one byte a second
            decoder.feed([byte])
            _ = try decoder.next()
            let status = detector.check(decoder.pendingFrame, now: UInt64(second) * 1_000)
            #expect(status == (second < 30 ? .receiving(since: 0) : .stalled(since: 0)))
        }
    }

    @Test func noPartialFrame_neverStalls() throws {
        let stream = try encodeStream([[1], [2]], key: key)
        var decoder = FrameDecoder(key: key)
        var detector = FrameStallDetector()
        #expect(detector.check(decoder.pendingFrame, now: 0) == .idle)
        decoder.feed(stream.header + stream.frames.joined())
        while try decoder.next() != nil {}
        #expect(detector.check(decoder.pendingFrame, now: 1_000) == .idle)
        #expect(detector.check(decoder.pendingFrame, now: 120_000) == .idle)
        #expect(detector.deadline == nil)
    }

    @Test func partialHeader_counts() throws {
        var decoder = FrameDecoder(key: key)
        var detector = FrameStallDetector()
        decoder.feed([UInt8](repeating: 0, count: 10))
        #expect(try decoder.next() == nil)
        #expect(detector.check(decoder.pendingFrame, now: 0) == .receiving(since: 0))
        #expect(detector.check(decoder.pendingFrame, now: 30_000) == .stalled(since: 0))
    }

    @Test func eachNewFrame_restartsTheClock() throws {
        let stream = try encodeStream([[1], [2]], key: key)
        var decoder = FrameDecoder(key: key)
        var detector = FrameStallDetector(limit: 30_000)
        decoder.feed(stream.header + stream.frames[0].prefix(5))
        _ = try decoder.next()
        #expect(detector.check(decoder.pendingFrame, now: 0) == .receiving(since: 0))
        // Frame 1 completes and frame 2 starts before the next check: a new frame, a new clock.
        decoder.feed(stream.frames[0].dropFirst(5) + stream.frames[1].prefix(5))
        #expect(try decoder.next() == .frame([1]))
        #expect(try decoder.next() == nil)
        #expect(detector.check(decoder.pendingFrame, now: 25_000) == .receiving(since: 25_000))
        #expect(detector.check(decoder.pendingFrame, now: 50_000) == .receiving(since: 25_000))
        #expect(detector.check(decoder.pendingFrame, now: 55_000) == .stalled(since: 25_000))
    }
}
