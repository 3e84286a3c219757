import Sodium
import Testing

/// BLAKE2b-512("abc"), RFC 7693 Appendix A.
private let blake2b512OfABC =
    "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1"
    + "7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923"

/// Keyed BLAKE2b-512 of the empty input with key 00 01 … 3f: the first entry of the BLAKE2
/// reference `blake2b-kat.txt` (also libsodium's `test/default/generichash` vectors).
private let blake2b512KeyedOfEmpty =
    "10ebb67700b1868efb4417987acf4690ae9d972fb7a590c2f02871799aaa4786"
    + "b5e996e8f0f4eb981fc214b005f42d2ff4233499391653df7aefcbc13fc51568"

@Suite struct GenericHashTests {
    @Test func genericHash_ofABC_matchesRFC7693() {
        #expect(Sodium.hex(GenericHash.hash(utf8("abc"), outputBytes: 64)) == blake2b512OfABC)
    }

    @Test func genericHash_hasherFedInPieces_matchesOneShot() {
        for split in 0...3 {
            let hasher = GenericHash.Hasher(outputBytes: 64)
            let input = utf8("abc")
            hasher.update(Array(input[..<split]))
            hasher.update(Array(input[split...]))
            #expect(Sodium.hex(hasher.finalize()) == blake2b512OfABC, "split at \(split)")
        }
        let bytewise = GenericHash.Hasher(outputBytes: 64)
        for byte in utf8("abc") { bytewise.update([byte]) }
        #expect(Sodium.hex(bytewise.finalize()) == blake2b512OfABC)
    }

    @Test func genericHash_withKey_matchesReferenceVector() {
        let key = (0..<64).map { UInt8($0) }
        #expect(Sodium.hex(GenericHash.hash([], key: key, outputBytes: 64)) == blake2b512KeyedOfEmpty)
        let hasher = GenericHash.Hasher(outputBytes: 64, key: key)
        #expect(Sodium.hex(hasher.finalize()) == blake2b512KeyedOfEmpty)
    }

    @Test func genericHash_rawBufferAndArray_agree() {
        let input = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let viaBuffer = input.withUnsafeBytes { GenericHash.hash($0) }
        #expect(viaBuffer == GenericHash.hash(input))
        #expect(viaBuffer.count == 32)
    }

    @Test func genericHash_intoABuffer_matchesTheArrayForm() {
        let input = utf8("abc")
        for length in [16, 32, 64] {
            var out = [UInt8](repeating: 0, count: length)
            input.withUnsafeBytes { i in out.withUnsafeMutableBytes { GenericHash.hash(i, into: $0) } }
            #expect(out == GenericHash.hash(input, outputBytes: length), "\(length) bytes")
        }
        var full = [UInt8](repeating: 0, count: 64)
        input.withUnsafeBytes { i in full.withUnsafeMutableBytes { GenericHash.hash(i, into: $0) } }
        #expect(Sodium.hex(full) == blake2b512OfABC)
    }

    @Test func genericHash_domain_isLabelThenPartsAndSeparatesDomains() {
        let direct = GenericHash.hash(utf8("parley/room/v1") + utf8("lobby"))
        #expect(GenericHash.hash(domain: "parley/room/v1", [utf8("lobby")]) == direct)
        #expect(GenericHash.hash(domain: "parley/room/v1", [utf8("lob"), utf8("by")]) == direct)
        #expect(GenericHash.hash(domain: "parley/inbox/v1", [utf8("lobby")]) != direct)
    }

    @Test func genericHash_outputLength_followsRequest() {
        #expect(GenericHash.hash(utf8("abc"), outputBytes: 16).count == 16)
        // BLAKE2b's output length is a parameter, so a shorter hash is not a prefix of a longer one.
        #expect(GenericHash.hash(utf8("abc"), outputBytes: 32) != Array(GenericHash.hash(utf8("abc"), outputBytes: 64).prefix(32)))
    }
}

@Suite struct SHA256Tests {
    @Test func sha256_ofABC_matchesFIPS180() {
        #expect(Sodium.hex(SHA256.hash(utf8("abc"))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func sha256_ofEmptyInput_matchesKnownDigest() {
        #expect(Sodium.hex(SHA256.hash([])) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }
}

@Suite struct AuthenticatorTests {
    /// RFC 4231 test case 2 ("Jefe"). HMAC pads a short key with zeros to the block size, so the
    /// 32-byte key "Jefe" ‖ 0^28 that `crypto_auth` requires gives the same HMAC-SHA-512, and
    /// HMAC-SHA-512-256 is its first 32 bytes.
    @Test func authenticator_rfc4231Case2_givesTruncatedHMACSHA512() {
        let key = utf8("Jefe") + [UInt8](repeating: 0, count: 28)
        let tag = Authenticator.tag(utf8("what do ya want for nothing?"), key: key)
        #expect(Sodium.hex(tag) == "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554")
    }

    @Test func authenticator_tag_roundTripsAndRejectsTampering() {
        let key = Sodium.randomBytes(Authenticator.keyBytes)
        let message = utf8("beacon: node 7, port 7748")
        let tag = Authenticator.tag(message, key: key)
        #expect(tag.count == Authenticator.tagBytes)
        #expect(Authenticator.isValid(tag, for: message, key: key))
        #expect(!Authenticator.isValid(flipping(tag, at: 31, bit: 7), for: message, key: key))
        #expect(!Authenticator.isValid(tag, for: flipping(message, at: 3), key: key))
        #expect(!Authenticator.isValid(tag, for: message + [0], key: key))
        #expect(!Authenticator.isValid(tag, for: message, key: flipping(key, at: 0)))
        #expect(!Authenticator.isValid(Array(tag.dropLast()), for: message, key: key))
        #expect(!Authenticator.isValid(tag, for: message, key: Array(key.dropLast())))
    }
}
