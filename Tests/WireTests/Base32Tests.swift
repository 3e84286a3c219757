import TestSupport
import Testing
import Wire

/// RFC 4648 §10 test vectors, lowercased and without padding.
private let rfc4648Vectors: [(String, String)] = [
    ("", ""), ("f", "my"), ("fo", "mzxq"), ("foo", "mzxw6"), ("foob", "mzxw6yq"), ("fooba", "mzxw6ytb"), ("foobar", "mzxw6ytboi"),
]

@Suite struct Base32Tests {
    @Test func base32_rfc4648Vectors_encodeAndDecode() {
        for (plain, encoded) in rfc4648Vectors {
            #expect(Base32.encode(Array(plain.utf8)) == encoded, "\(plain)")
            #expect(Base32.decode(encoded) == Array(plain.utf8), "\(encoded)")
        }
    }

    @Test func base32_uppercaseAndMixedCase_decode() {
        for (plain, encoded) in rfc4648Vectors {
            #expect(Base32.decode(encoded.uppercased()) == Array(plain.utf8), "\(encoded)")
        }
        #expect(Base32.decode("MzXw6YtBoI") == Array("foobar".utf8))
    }

    @Test(arguments: ["mzxw6=", "mzxw6ytboi======", "mzx0", "mzx1", "mzx8", "mzx9", "mz w6", "mzxw-", "mzxé", "mzxw6\n"])
    func base32_charactersOutsideAlphabet_areRejected(text: String) {
        #expect(Base32.decode(text) == nil)
    }

    @Test func base32_nonZeroPaddingBits_areRejected() {
        // "my" is "f" with two zero padding bits; "mz" sets one of them.
        #expect(Base32.decode("my") == Array("f".utf8))
        #expect(Base32.decode("mz") == nil)
        #expect(Base32.decode("mzxr") == nil)  // "fo" with a padding bit set
        #expect(Base32.decode("mzxw7") == nil)  // "foo" with its padding bit set
    }

    @Test(arguments: [1, 3, 6])
    func base32_lengthsNoByteCountProduces_areRejected(length: Int) {
        #expect(Base32.decode(String(repeating: "a", count: length)) == nil)
    }

    @Test func base32_randomBytes_roundTrip() {
        let seed = SeededRandom.announce("base32_randomBytes_roundTrip")
        var random = SeededRandom(seed: seed)
        for _ in 0..<500 {
            let count = Int.random(in: 0...80, using: &random)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            let text = Base32.encode(bytes)
            #expect(text.utf8.count == (count * 8 + 4) / 5, "seed \(seed)")
            #expect(text == text.lowercased(), "seed \(seed)")
            #expect(Base32.decode(text) == bytes, "seed \(seed), bytes \(bytes)")
            #expect(Base32.decode(text.uppercased()) == bytes, "seed \(seed), bytes \(bytes)")
        }
    }

    /// A typed prefix is matched as a range of bytes: its ends' texts start with the prefix, and
    /// the bytes one step outside either end do not, so exactly the ids with that prefix lie in it.
    @Test func prefixRange_holdsExactlyTheBytesWhoseTextStartsWithThePrefix() throws {
        let seed = SeededRandom.announce("prefixRange_holdsExactlyTheBytesWhoseTextStartsWithThePrefix")
        var random = SeededRandom(seed: seed)
        func text(_ bytes: [UInt8]) -> String { Base32.encode(bytes) }
        /// The next or previous 32 bytes in byte order, nil past either end.
        func step(_ bytes: [UInt8], by delta: Int) -> [UInt8]? {
            var bytes = bytes
            for i in bytes.indices.reversed() {
                let (value, carried) = delta > 0 ? bytes[i].addingReportingOverflow(1) : bytes[i].subtractingReportingOverflow(1)
                bytes[i] = value
                if !carried { return bytes }
            }
            return nil
        }
        for _ in 0..<200 {
            let id = (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }
            let length = Int.random(in: 1...51, using: &random)
            let prefix = String(text(id).prefix(length))
            let (low, high) = try #require(Base32.prefixRange(prefix, byteCount: 32), "seed \(seed)")
            #expect(low.lexicographicallyPrecedes(id) || low == id, "seed \(seed), \(prefix)")
            #expect(id.lexicographicallyPrecedes(high) || id == high, "seed \(seed), \(prefix)")
            #expect(text(low).hasPrefix(prefix) && text(high).hasPrefix(prefix), "seed \(seed), \(prefix)")
            if let below = step(low, by: -1) { #expect(!text(below).hasPrefix(prefix), "seed \(seed), \(prefix)") }
            if let above = step(high, by: 1) { #expect(!text(above).hasPrefix(prefix), "seed \(seed), \(prefix)") }
            #expect(Base32.prefixRange(prefix.uppercased(), byteCount: 32)! == (low, high), "seed \(seed), \(prefix)")
        }
        #expect(Base32.prefixRange("", byteCount: 2)! == ([0, 0], [0xFF, 0xFF]))
        #expect(Base32.prefixRange("ab1", byteCount: 32) == nil, "1 is outside the alphabet")
        // 2 bytes are 16 bits: a fourth character's last four bits are padding, which must be zero.
        #expect(Base32.prefixRange("aaaq", byteCount: 2)! == ([0, 1], [0, 1]))
        #expect(Base32.prefixRange("aaar", byteCount: 2) == nil)
    }
}

@Suite struct Bytes32Tests {
    @Test func bytes32_roundTripsThroughBytesAndCodec() throws {
        let seed = SeededRandom.announce("bytes32_roundTripsThroughBytesAndCodec")
        var random = SeededRandom(seed: seed)
        for _ in 0..<100 {
            let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }
            let value = try #require(Bytes32(bytes))
            #expect(value.bytes == bytes, "seed \(seed)")
            #expect(value.base32 == Base32.encode(bytes), "seed \(seed)")
            var w = ByteWriter()
            w.bytes32(value)
            #expect(w.bytes == bytes, "seed \(seed)")
            var r = ByteReader(w.bytes)
            #expect(try r.bytes32("id") == value, "seed \(seed)")
        }
    }

    @Test func bytes32_wrongLength_isNil() {
        #expect(Bytes32([UInt8](repeating: 1, count: 31)) == nil)
        #expect(Bytes32([UInt8](repeating: 1, count: 33)) == nil)
        #expect(Bytes32([UInt8]()) == nil)
    }

    @Test func bytes32_layout_isBigEndianWords() throws {
        let value = try #require(Bytes32(Array(1...32)))
        #expect(value.w0 == 0x0102_0304_0506_0708)
        #expect(value.w3 == 0x191A_1B1C_1D1E_1F20)
        #expect(Bytes32.zero.isZero)
        #expect(!value.isZero)
    }

    @Test func bytes32_ordering_equalsLexicographicByteOrdering() throws {
        let seed = SeededRandom.announce("bytes32_ordering_equalsLexicographicByteOrdering")
        var random = SeededRandom(seed: seed)
        var values: [Bytes32] = []
        for _ in 0..<300 {
            // Few distinct byte values and shared prefixes, so ties and late differences are common.
            var bytes = [UInt8](repeating: 0, count: 32)
            let differing = Int.random(in: 0..<32, using: &random)
            for i in differing..<32 { bytes[i] = [0x00, 0x7F, 0x80, 0xFF].randomElement(using: &random)! }
            values.append(try #require(Bytes32(bytes)))
        }
        for a in values.prefix(60) {
            for b in values {
                #expect((a < b) == a.bytes.lexicographicallyPrecedes(b.bytes), "seed \(seed)")
                #expect((a == b) == (a.bytes == b.bytes), "seed \(seed)")
            }
        }
        #expect(values.sorted().map(\.bytes) == values.map(\.bytes).sorted { $0.lexicographicallyPrecedes($1) })
    }

    @Test func byteReader_bytes32_truncated_throwsTruncated() {
        var r = ByteReader([UInt8](repeating: 0, count: 31))
        #expect(throws: WireDecodingError.truncated(field: "id")) { try r.bytes32("id") }
        #expect(r.offset == 0)
    }
}
