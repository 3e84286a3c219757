import Testing

@testable import NodeRuntime

@Suite struct LineBufferTests {
    @Test func splitsLines_acrossFeeds_andDropsCR() throws {
        var buffer = LineBuffer(limit: 16)
        buffer.feed(Array("{\"a\":1}\r\n{\"b\"".utf8))
        #expect(try buffer.nextLine() == Array("{\"a\":1}".utf8))
        #expect(try buffer.nextLine() == nil)
        buffer.feed(Array(":2}\n".utf8))
        #expect(try buffer.nextLine() == Array("{\"b\":2}".utf8))
        #expect(try buffer.nextLine() == nil)
    }

    @Test func aLineOverTheLimit_throws() {
        var buffer = LineBuffer(limit: 8)
        buffer.feed([UInt8](repeating: 0x61, count: 9))
        #expect(throws: LineBuffer.Overflow.self) { try buffer.nextLine() }
        var another = LineBuffer(limit: 8)
        another.feed([UInt8](repeating: 0x61, count: 12) + [0x0A])
        #expect(throws: LineBuffer.Overflow.self) { try another.nextLine() }
    }
}
