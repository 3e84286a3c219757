import SecureLink
import Sodium
import Testing

/// Tampered, reordered, duplicated, dropped and oversized input: each fails with a specific error.
@Suite struct FrameDecoderAttackTests {
    let key = streamKey()

    func threeFrames() throws -> (header: [UInt8], frames: [[UInt8]]) {
        try encodeStream([[1, 1, 1], [2, 2, 2], [3, 3, 3]], key: key)
    }

    @Test(arguments: [4, 5, 10, 20, 23])  // offsets inside frame 1's ciphertext (4 + 3 + 17 bytes)
    func flippedBit_inTheCiphertext_failsAuthentication(offset: Int) throws {
        let stream = try threeFrames()
        let tampered = flipping(stream.frames[0], byte: offset, bit: 5)
        #expect(decodingError(stream.header + tampered + stream.frames[1], key: key) == .authenticationFailed)
    }

    @Test(arguments: [0, 1])  // lower and raise the length by one; the next frame supplies the bytes
    func changedLength_failsAuthentication(bit: Int) throws {
        let stream = try threeFrames()
        let tampered = flipping(stream.frames[0], byte: 3, bit: bit)
        #expect(decodingError(stream.header + tampered + stream.frames[1] + stream.frames[2], key: key) == .authenticationFailed)
    }

    @Test func reorderedFrames_failAuthentication() throws {
        let stream = try threeFrames()
        #expect(decodingError(stream.header + stream.frames[1] + stream.frames[0], key: key) == .authenticationFailed)
    }

    @Test func duplicatedFrame_failsAuthentication_afterTheOriginalIsDelivered() throws {
        let stream = try threeFrames()
        var decoder = FrameDecoder(key: key)
        decoder.feed(stream.header + stream.frames[0] + stream.frames[0])
        #expect(try decoder.next() == .frame([1, 1, 1]))
        #expect(throws: FrameError.authenticationFailed) { _ = try decoder.next() }
    }

    @Test func droppedFrame_failsAuthentication() throws {
        let stream = try threeFrames()
        #expect(decodingError(stream.header + stream.frames[0] + stream.frames[2], key: key) == .authenticationFailed)
    }

    @Test func droppedRekeyFrame_failsAuthentication() throws {
        let configuration = FrameConfiguration(rekeyInterval: 2)
        let stream = try encodeStream([[1], [2], [3], [4]], key: key, configuration: configuration)
        let bytes = stream.header + stream.frames[0] + stream.frames[2]  // frame 2 carried the REKEY tag
        #expect(decodingError(bytes, key: key, configuration: configuration) == .authenticationFailed)
    }

    @Test func changedHeader_failsAtTheFirstFrame() throws {
        let stream = try threeFrames()
        #expect(decodingError(flipping(stream.header, byte: 0) + stream.frames[0], key: key) == .authenticationFailed)
    }

    @Test func streamUnderAnotherKey_failsAuthentication() throws {
        let stream = try threeFrames()
        #expect(decodingError(stream.header + stream.frames[0], key: streamKey()) == .authenticationFailed)
    }

    @Test func frameSpliced_fromAnotherStream_failsAuthentication() throws {
        let stream = try threeFrames()
        let other = try encodeStream([[1, 1, 1], [2, 2, 2]], key: key)  // same key, another header
        #expect(decodingError(stream.header + stream.frames[0] + other.frames[1], key: key) == .authenticationFailed)
    }

    // MARK: Lengths

    @Test(arguments: [[0x00, 0x00, 0x04, 0x12], [0xFF, 0xFF, 0xFF, 0xFF]] as [[UInt8]])
    func lengthOverTheLimit_isRefusedAfterOnlyItsFourBytes(length: [UInt8]) throws {
        let configuration = FrameConfiguration(maxPlaintextBytes: 1_024)
        let announced = length.reduce(0) { $0 << 8 | Int($1) } - 17  // 0x412 = 1_042 = 1_025 + 17
        var decoder = FrameDecoder(key: key, configuration: configuration)
        decoder.feed(try threeFrames().header + length.prefix(3))
        #expect(try decoder.next() == nil)
        decoder.feed(length.suffix(1))
        #expect(throws: FrameError.tooLarge(length: announced, limit: 1_024)) { _ = try decoder.next() }
        #expect(decoder.pendingFrame == nil)  // nothing kept after the failure
    }

    @Test(arguments: [0, 1, 16])
    func lengthBelowTheCiphertextOverhead_isTooShort(length: UInt8) throws {
        var decoder = FrameDecoder(key: key)
        decoder.feed(try threeFrames().header + [0, 0, 0, length])
        #expect(throws: FrameError.tooShort(length: Int(length))) { _ = try decoder.next() }
    }

    @Test func anError_isFinal_andLaterBytesAreIgnored() throws {
        let stream = try threeFrames()
        var decoder = FrameDecoder(key: key)
        decoder.feed(stream.header + stream.frames[1])
        #expect(throws: FrameError.authenticationFailed) { _ = try decoder.next() }
        decoder.feed(stream.frames[0])
        #expect(throws: FrameError.authenticationFailed) { _ = try decoder.next() }
    }
}
