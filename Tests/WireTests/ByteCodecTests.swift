import Testing
import Wire

/// A record using every field type, written and read in one order.
private struct Sample: Equatable {
    var a: UInt8 = 0xFE
    var b: UInt16 = 0xBEEF
    var c: UInt32 = 0xDEAD_BEEF
    var d: UInt64 = 0x0123_4567_89AB_CDEF
    var raw: [UInt8] = [1, 2, 3, 4]
    var blob16: [UInt8] = Array("sixteen".utf8)
    var blob32: [UInt8] = [UInt8](repeating: 0x33, count: 300)
    var text = "héllo, #lobby ✓"
    var some: UInt32? = 42
    var none: UInt32? = nil
    var key = Bytes32(w0: 1, w1: 2, w2: 3, w3: .max)

    func encoded() -> [UInt8] {
        var w = ByteWriter()
        w.u8(a)
        w.u16(b)
        w.u32(c)
        w.u64(d)
        w.raw(raw)
        w.blob16(blob16)
        w.blob32(blob32)
        w.string16(text)
        w.optional(some) { $0.u32($1) }
        w.optional(none) { $0.u32($1) }
        w.bytes32(key)
        return w.bytes
    }

    static func decode(_ bytes: [UInt8]) throws(WireDecodingError) -> Sample {
        var r = ByteReader(bytes)
        var s = Sample()
        s.a = try r.u8("a")
        s.b = try r.u16("b")
        s.c = try r.u32("c")
        s.d = try r.u64("d")
        s.raw = try r.raw(4, "raw")
        s.blob16 = try r.blob16("blob16")
        s.blob32 = try r.blob32("blob32", limit: 1 << 20)
        s.text = try r.string16("text")
        s.some = try r.optional("some") { (r: inout ByteReader) throws(WireDecodingError) in try r.u32("some") }
        s.none = try r.optional("none") { (r: inout ByteReader) throws(WireDecodingError) in try r.u32("none") }
        s.key = try r.bytes32("key")
        try r.expectEnd()
        return s
    }
}

private func decodingError<T>(_ body: () throws(WireDecodingError) -> T) -> WireDecodingError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}

@Suite struct ByteCodecTests {
    @Test func byteCodec_everyFieldType_roundTrips() throws {
        let sample = Sample()
        #expect(try Sample.decode(sample.encoded()) == sample)
        var extremes = Sample(a: 0, b: 0, c: .max, d: .max, raw: [0, 0, 0, 0], blob16: [], blob32: [], text: "", some: 0, none: nil, key: .zero)
        #expect(try Sample.decode(extremes.encoded()) == extremes)
        extremes.none = .max
        #expect(try Sample.decode(extremes.encoded()) == extremes)
    }

    @Test func byteWriter_integers_areBigEndian() {
        var w = ByteWriter()
        w.u16(0x0102)
        w.u32(0x0304_0506)
        w.u64(0x0708_090A_0B0C_0D0E)
        #expect(w.bytes == Array(1...14))
        var lengths = ByteWriter()
        lengths.blob16([9])
        lengths.blob32([9])
        lengths.optional(UInt8(5)) { $0.u8($1) }
        lengths.optional(UInt8?.none) { $0.u8($1) }
        #expect(lengths.bytes == [0, 1, 9, 0, 0, 0, 1, 9, 1, 5, 0])
    }

    @Test func byteReader_everyTruncatedPrefix_throwsTruncated() {
        let whole = Sample().encoded()
        for length in 0..<whole.count {
            let error = decodingError { () throws(WireDecodingError) in try Sample.decode(Array(whole.prefix(length))) }
            guard case .truncated = error else {
                Issue.record("prefix of \(length) bytes: expected truncated, got \(String(describing: error))")
                continue
            }
        }
    }

    @Test func byteReader_readsFromASliceWithNonZeroStart() throws {
        let bytes: [UInt8] = [0xFF, 0xFF, 0, 2, 7, 8, 0xFF]
        var r = ByteReader(bytes[2..<6])
        #expect(try r.blob16("field") == [7, 8])
        #expect(r.isAtEnd)
        #expect(throws: WireDecodingError.truncated(field: "next")) { try r.u8("next") }
    }

    @Test func byteReader_blobOverLimit_throwsTooLongBeforeReading() throws {
        // The lengths claim more than the limit, and more than the input holds: the limit wins.
        var r16 = ByteReader([0x01, 0x00])
        #expect(throws: WireDecodingError.tooLong(field: "name", length: 256, limit: 255)) { try r16.blob16("name", limit: 255) }
        var r32 = ByteReader([0xFF, 0xFF, 0xFF, 0xFF])
        #expect(throws: WireDecodingError.tooLong(field: "body", length: Int(UInt32.max), limit: 65_536)) {
            try r32.blob32("body", limit: 65_536)
        }
        var s16 = ByteReader([0x00, 0x05] + Array("hello".utf8))
        #expect(throws: WireDecodingError.tooLong(field: "nick", length: 5, limit: 4)) { try s16.string16("nick", limit: 4) }
        // At the limit exactly, the field is read.
        var exact = ByteReader([0x00, 0x02, 1, 2])
        #expect(try exact.blob16("name", limit: 2) == [1, 2])
    }

    @Test(arguments: [[0xFF], [0xC3, 0x28], [0xE2, 0x82], [0xED, 0xA0, 0x80], [0xC0, 0xAF], [0xF8, 0x88, 0x80, 0x80, 0x80]] as [[UInt8]])
    func byteReader_invalidUTF8_throwsInvalidUTF8(text: [UInt8]) {
        var r = ByteReader([0, UInt8(text.count)] + text)
        #expect(throws: WireDecodingError.invalidUTF8(field: "text")) { try r.string16("text") }
    }

    @Test func byteReader_optionalPresenceByteOtherThan0Or1_throwsInvalidValue() {
        for presence: UInt8 in [2, 0x80, 0xFF] {
            var r = ByteReader([presence, 0, 0, 0, 1])
            #expect(throws: WireDecodingError.invalidValue(field: "maybe")) {
                try r.optional("maybe") { (r: inout ByteReader) throws(WireDecodingError) in try r.u32("maybe") }
            }
        }
    }

    @Test func byteReader_leftoverBytes_throwTrailingBytes() throws {
        var r = ByteReader(Sample().encoded() + [0, 0, 0])
        _ = try r.u8()
        #expect(throws: WireDecodingError.trailingBytes(count: r.remaining)) { try r.expectEnd() }
        #expect(throws: WireDecodingError.trailingBytes(count: 3)) { try Sample.decode(Sample().encoded() + [0, 0, 0]) }
    }

    @Test func byteReader_negativeRawCount_throwsTruncated() {
        var r = ByteReader([1, 2, 3])
        #expect(throws: WireDecodingError.truncated(field: "raw")) { try r.raw(-1, "raw") }
    }

    @Test func decodingError_descriptions_nameTheField() {
        #expect(WireDecodingError.truncated(field: "seq").description == "input ends inside seq")
        #expect(WireDecodingError.tooLong(field: "body", length: 9, limit: 8).description.contains("body"))
        #expect(WireDecodingError.trailingBytes(count: 2).description.contains("2"))
    }

    @Test(arguments: [0, 1, 127, 128, 300, 16_383, 16_384, 1 << 32, UInt64.max - 1, .max] as [UInt64])
    func varint_roundTripsInItsCountedBytes(value: UInt64) throws {
        var w = ByteWriter()
        w.varint(value)
        #expect(w.bytes.count == ByteWriter.varintBytes(value))
        var r = ByteReader(w.bytes)
        #expect(try r.varint() == value)
        try r.expectEnd()
    }

    @Test func varint_smallValues_takeOneByte_andLowBitsComeFirst() {
        var w = ByteWriter()
        w.varint(127)
        w.varint(300)
        #expect(w.bytes == [0x7F, 0xAC, 0x02])
    }

    /// A longer form of a shorter value, a value past 64 bits, and a continuation past ten
    /// bytes are each refused: every value has one encoding.
    @Test(
        arguments: [[0x80, 0x00], [0xFF, 0x80, 0x00], [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02], [UInt8](repeating: 0x80, count: 11)]
            as [[UInt8]])
    func varint_nonCanonicalOrOversized_throwsInvalidValue(bytes: [UInt8]) {
        var r = ByteReader(bytes)
        #expect(throws: WireDecodingError.invalidValue(field: "seq")) { try r.varint("seq") }
    }

    @Test func varint_truncated_throwsTruncated() {
        var r = ByteReader([0x80, 0x80])
        #expect(throws: WireDecodingError.truncated(field: "seq")) { try r.varint("seq") }
    }
}
