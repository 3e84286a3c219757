import Identity
import Sodium
import Testing

@Suite struct UserIDTests {
    @Test func userID_text_roundTripsAsLowercase52Characters() throws {
        for _ in 0..<50 {
            let id = Identity().id
            #expect(id.text.utf8.count == 52)
            #expect(id.text == id.text.lowercased())
            #expect(UserID(text: id.text) == id)
            #expect(id.description == id.text)
        }
    }

    @Test func userID_text_isCaseInsensitive() throws {
        let id = Identity().id
        #expect(UserID(text: id.text.uppercased()) == id)
        let mixed = String(id.text.enumerated().map { $0.offset.isMultiple(of: 2) ? Character($0.element.uppercased()) : $0.element })
        #expect(UserID(text: mixed) == id)
    }

    @Test func userID_text_ofKnownKey_isTheBase32OfThePublicKey() throws {
        // RFC 8032 §7.1 TEST 1 public key; base32 of its bytes (RFC 4648, lowercase, no padding).
        let publicKey = try #require(Sodium.bytes(hex: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"))
        let id = try #require(UserID(publicKey: publicKey))
        #expect(id.text == "25njqamcweflpvkl73j4szahhihoc4xt3ktcgjnpaingr5yhkena")
        #expect(id.publicKey == publicKey)
    }

    @Test func userID_text_ofWrongLength_isRejected() throws {
        let text = Identity().id.text
        #expect(UserID(text: "") == nil)
        #expect(UserID(text: String(text.dropLast())) == nil)
        #expect(UserID(text: text + "a") == nil)
        #expect(UserID(text: text + text) == nil)
        // 56 characters is 35 bytes: valid base32, wrong size for a key.
        #expect(UserID(text: text + "aaaa") == nil)
    }

    @Test(arguments: ["0", "1", "8", "9", "=", "-", " ", "é", "ä"])
    func userID_text_withCharacterOutsideAlphabet_isRejected(character: String) throws {
        let text = Identity().id.text
        let bad = String(text.dropLast(2)) + character + String(text.suffix(1))
        #expect(UserID(text: bad) == nil)
    }

    @Test func userID_text_withNonZeroPaddingBits_isRejected() throws {
        // 52 characters carry 260 bits for 256: the last character's low 4 bits are padding and
        // must be zero, so only "a" (0) and "q" (16) may end a canonical id.
        let text = Identity().id.text
        #expect(["a", "q"].contains(text.suffix(1)))
        for last in ["b", "p", "r", "7"] {
            #expect(UserID(text: String(text.dropLast()) + last) == nil, "ending in \(last)")
        }
    }

    @Test func userID_publicKey_ofWrongLength_isRejected() {
        #expect(UserID(publicKey: [UInt8](repeating: 1, count: 31)) == nil)
        #expect(UserID(publicKey: [UInt8](repeating: 1, count: 33)) == nil)
        #expect(UserID(publicKey: [UInt8](repeating: 1, count: 32)) != nil)
    }

    @Test func userID_display_isNickHashAndFirstSixCharacters() {
        let id = Identity().id
        #expect(id.short.count == 6)
        #expect(id.text.hasPrefix(id.short))
        #expect(id.display(nick: "alice") == "alice#" + id.text.prefix(6))
    }

    @Test func userID_ordering_followsPublicKeyBytes() {
        let ids = (0..<40).map { _ in Identity().id }
        let byBytes = ids.sorted { $0.publicKey.lexicographicallyPrecedes($1.publicKey) }
        #expect(ids.sorted() == byBytes)
    }
}

@Suite struct IdentityTests {
    @Test func identity_signature_verifiesWithUserIDAsPublicKey() {
        let identity = Identity()
        let message = Array("hello, lobby".utf8)
        let signature = identity.sign(message)
        #expect(Signing.isValidSignature(signature, for: message, publicKey: identity.id.publicKey))
        #expect(!Signing.isValidSignature(signature, for: message + [0], publicKey: identity.id.publicKey))
    }

    @Test func identity_fromSeed_isDeterministic() throws {
        let seed = [UInt8](repeating: 7, count: 32)
        #expect(try Identity(seed: seed).id == Identity(seed: seed).id)
        #expect(try Identity(seed: seed).id != Identity(seed: [UInt8](repeating: 8, count: 32)).id)
        #expect(throws: SodiumError.invalidLength(what: "Ed25519 seed", expected: 32, actual: 31)) {
            try Identity(seed: [UInt8](repeating: 7, count: 31))
        }
    }

    @Test func identity_boxKeyPair_opensSealedBoxesToItsUserID() throws {
        let identity = Identity()
        let recipient = try Signing.curve25519PublicKey(fromEd25519: identity.id.publicKey)
        #expect(recipient == identity.boxKeyPair.publicKey)
        let box = try SealedBox.seal(Array("invite".utf8), to: recipient)
        #expect(try SealedBox.open(box, with: identity.boxKeyPair) == Array("invite".utf8))
    }
}
