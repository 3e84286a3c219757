import SecureLink
import Sodium
import TestSupport
import Testing

@Suite struct FrameCodecTests {
    @Test func frames_fedByteByByte_inRandomPieces_andAllAtOnce_decodeIdentically() throws {
        let seed = SeededRandom.announce("frames_fedByteByByte_inRandomPieces_andAllAtOnce_decodeIdentically")
        var generator = SeededRandom(seed: seed)
        let sizes = [0, 1, 17, 300, 4096, 70_000] + (0..<20).map { _ in Int.random(in: 0...2_000, using: &generator) }
        let plaintexts = sizes.map { randomBytes($0, using: &generator) }
        let key = streamKey()
        let stream = try encodeStream(plaintexts, key: key, goodbye: true)
        let bytes = stream.header + stream.frames.joined()
        let expected = plaintexts.map(FrameEvent.frame) + [.goodbye(reason: nil)]

        let allAtOnce = try decodeAll(bytes, key: key)
        let byteByByte = try decodeAll(bytes, key: key, pieces: [Int](repeating: 1, count: bytes.count))
        let randomPieces = (0..<bytes.count).map { _ in Int.random(in: 1...9_000, using: &generator) }
        let inPieces = try decodeAll(bytes, key: key, pieces: randomPieces)
        #expect(allAtOnce == expected, "seed \(seed)")
        #expect(byteByByte == expected, "seed \(seed)")
        #expect(inPieces == expected, "seed \(seed)")
    }

    @Test func header_isSentFirst_andIs24Bytes() throws {
        let key = streamKey()
        var decoder = FrameDecoder(key: key)
        let stream = try encodeStream([[1, 2, 3]], key: key)
        #expect(stream.header.count == 24)
        decoder.feed(stream.header.prefix(23))
        #expect(try decoder.next() == nil)
        decoder.feed(stream.header.suffix(1) + stream.frames[0])
        #expect(try decoder.next() == .frame([1, 2, 3]))
        #expect(try decoder.next() == nil)
    }

    @Test func frame_layout_isLengthBigEndian_thenCiphertext_17BytesOverPlaintext() throws {
        var encoder = FrameEncoder(key: streamKey())
        let frame = try encoder.encode([UInt8](repeating: 9, count: 300))
        #expect(frame.count == 4 + 300 + 17)
        #expect(Array(frame.prefix(4)) == [0, 0, 0x01, 0x3D])  // 317
    }

    @Test func frameAtTheLimit_passes_andOneByteMore_isRefusedByTheEncoder() throws {
        let configuration = FrameConfiguration(maxPlaintextBytes: 1_000)
        let key = streamKey()
        var encoder = FrameEncoder(key: key, configuration: configuration)
        let atLimit = try encoder.encode([UInt8](repeating: 1, count: 1_000))
        #expect(try decodeAll(encoder.header + atLimit, key: key, configuration: configuration) == [.frame([UInt8](repeating: 1, count: 1_000))])
        #expect(throws: FrameError.tooLarge(length: 1_001, limit: 1_000)) {
            _ = try encoder.encode([UInt8](repeating: 1, count: 1_001))
        }
    }

    @Test func defaultLimit_isOneMebibyte() throws {
        #expect(FrameConfiguration().maxPlaintextBytes == 1 << 20)
        let key = streamKey()
        let big = [UInt8](repeating: 0x5A, count: 1 << 20)
        let stream = try encodeStream([big], key: key)
        #expect(try decodeAll(stream.header + stream.frames[0], key: key) == [.frame(big)])
    }

    // MARK: Goodbye

    @Test(arguments: [nil, 0, 7] as [UInt8?])
    func goodbye_isDecodedWithItsReason(reason: UInt8?) throws {
        let key = streamKey()
        var encoder = FrameEncoder(key: key)
        let bytes = encoder.header + (try encoder.encode([1])) + (try encoder.encodeGoodbye(reason: reason))
        #expect(try decodeAll(bytes, key: key) == [.frame([1]), .goodbye(reason: reason)])
    }

    @Test func bytesAfterGoodbye_failWithAfterGoodbye_andTheErrorSticks() throws {
        let key = streamKey()
        let stream = try encodeStream([[1]], key: key, goodbye: true)
        var decoder = FrameDecoder(key: key)
        decoder.feed(stream.header + stream.frames.joined())
        #expect(try decoder.next() == .frame([1]))
        #expect(try decoder.next() == .goodbye(reason: nil))
        #expect(try decoder.next() == nil)
        decoder.feed([0])
        #expect(throws: FrameError.afterGoodbye) { _ = try decoder.next() }
        #expect(throws: FrameError.afterGoodbye) { _ = try decoder.next() }
    }

    @Test func bytesInTheSameBatchAsTheGoodbye_failAfterTheGoodbyeIsReported() throws {
        let key = streamKey()
        let stream = try encodeStream([], key: key, goodbye: true)
        var decoder = FrameDecoder(key: key)
        decoder.feed(stream.header + stream.frames[0] + [1, 2, 3])
        #expect(try decoder.next() == .goodbye(reason: nil))
        #expect(throws: FrameError.afterGoodbye) { _ = try decoder.next() }
    }

    @Test func encoding_afterGoodbye_isRefused() throws {
        var encoder = FrameEncoder(key: streamKey())
        _ = try encoder.encodeGoodbye()
        #expect(throws: FrameError.afterGoodbye) { _ = try encoder.encode([1]) }
        #expect(throws: FrameError.afterGoodbye) { _ = try encoder.encodeGoodbye() }
    }

    @Test func goodbye_withMoreThanOneReasonByte_isMalformed() throws {
        let key = streamKey()
        let pusher = try SecretStream.Pusher(key: key)
        let length: [UInt8] = [0, 0, 0, 2 + 17]
        let goodbye = length + (try pusher.push([1, 2], additionalData: length, tag: .final))
        #expect(decodingError(pusher.header + goodbye, key: key) == .malformedGoodbye(length: 2))
    }

    // MARK: Rekey

    @Test func rekeyEveryThreeFrames_stillDecodesTwentyFrames() throws {
        let configuration = FrameConfiguration(rekeyInterval: 3)
        let key = streamKey()
        let plaintexts = (0..<20).map { [UInt8(truncatingIfNeeded: $0), 0xEE] }
        let stream = try encodeStream(plaintexts, key: key, configuration: configuration)
        let bytes = stream.header + stream.frames.joined()
        #expect(try decodeAll(bytes, key: key, configuration: configuration) == plaintexts.map(FrameEvent.frame))
        #expect(
            try decodeAll(bytes, key: key, pieces: [Int](repeating: 5, count: bytes.count), configuration: configuration)
                == plaintexts.map(FrameEvent.frame))
    }

    /// libsodium rekeys both ends by itself on a REKEY tag: a plain puller that never calls
    /// `rekey()` reads every frame, and sees the tag on frames 3, 6, 9, ...
    @Test func rekeyTag_isOnEveryThirdFrame_andNeedsNoExplicitCallOnEitherSide() throws {
        let key = streamKey()
        let stream = try encodeStream((0..<10).map { [UInt8($0)] }, key: key, configuration: FrameConfiguration(rekeyInterval: 3))
        let puller = try SecretStream.Puller(key: key, header: stream.header)
        let tags = try stream.frames.map { frame in
            try puller.pull(Array(frame.dropFirst(4)), additionalData: Array(frame.prefix(4))).tag
        }
        #expect(tags == [.message, .message, .rekey, .message, .message, .rekey, .message, .message, .rekey, .message])
    }

    @Test func requestRekey_putsTheTagOnTheNextFrameOnly() throws {
        let key = streamKey()
        var encoder = FrameEncoder(key: key)
        let first = try encoder.encode([1])
        encoder.requestRekey()
        let second = try encoder.encode([2])
        let third = try encoder.encode([3])
        let puller = try SecretStream.Puller(key: key, header: encoder.header)
        let tags = try [first, second, third].map { try puller.pull(Array($0.dropFirst(4)), additionalData: Array($0.prefix(4))).tag }
        #expect(tags == [.message, .rekey, .message])
        #expect(try decodeAll(encoder.header + first + second + third, key: key) == [.frame([1]), .frame([2]), .frame([3])])
    }

    @Test func decoder_keepsOnlyThePartialFrame_afterDecodingWholeOnes() throws {
        let key = streamKey()
        let stream = try encodeStream([[UInt8](repeating: 1, count: 5_000), [2, 2]], key: key)
        var decoder = FrameDecoder(key: key)
        decoder.feed(stream.header + stream.frames[0] + stream.frames[1].prefix(6))
        #expect(try decoder.next() == .frame([UInt8](repeating: 1, count: 5_000)))
        #expect(try decoder.next() == nil)
        #expect(decoder.pendingFrame?.index == 2)  // header 0, frame 1 done, frame 2 arriving
        #expect(decoder.pendingFrame?.bufferedBytes == 6)
        decoder.feed(stream.frames[1].dropFirst(6))
        #expect(try decoder.next() == .frame([2, 2]))
        #expect(decoder.pendingFrame == nil)
    }
}
