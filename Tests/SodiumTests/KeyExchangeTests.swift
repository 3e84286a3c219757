import Sodium
import Testing

/// RFC 7748 §6.1: Alice's and Bob's X25519 keys and their shared secret.
private enum RFC7748 {
    static let aliceSecret = "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"
    static let alicePublic = "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"
    static let bobSecret = "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"
    static let bobPublic = "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"
    static let shared = "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"
}

@Suite struct KeyExchangeTests {
    @Test func keyExchange_rfc7748Vectors_givePublishedKeysAndSharedSecret() throws {
        let alice = KeyExchange.KeyPair(secretKey: SecureBytes(try hexBytes(RFC7748.aliceSecret)))
        let bob = KeyExchange.KeyPair(secretKey: SecureBytes(try hexBytes(RFC7748.bobSecret)))
        #expect(Sodium.hex(alice.publicKey) == RFC7748.alicePublic)
        #expect(Sodium.hex(bob.publicKey) == RFC7748.bobPublic)
        #expect(Sodium.hex(try KeyExchange.sharedSecret(alice.secretKey, bob.publicKey).bytes) == RFC7748.shared)
        #expect(Sodium.hex(try KeyExchange.sharedSecret(bob.secretKey, alice.publicKey).bytes) == RFC7748.shared)
    }

    @Test func keyExchange_randomPairs_agree() throws {
        let a = KeyExchange.KeyPair()
        let b = KeyExchange.KeyPair()
        #expect(try KeyExchange.sharedSecret(a.secretKey, b.publicKey) == KeyExchange.sharedSecret(b.secretKey, a.publicKey))
        #expect(try KeyExchange.sharedSecret(a.secretKey, b.publicKey) != KeyExchange.sharedSecret(a.secretKey, KeyExchange.KeyPair().publicKey))
    }

    @Test func keyExchange_lowOrderPoint_isRejected() throws {
        let a = KeyExchange.KeyPair()
        #expect(throws: SodiumError.invalidPublicKey) { try KeyExchange.sharedSecret(a.secretKey, [UInt8](repeating: 0, count: 32)) }
        // u = 1 has order 4, and clamped scalars are multiples of 8, so the result is zero too.
        #expect(throws: SodiumError.invalidPublicKey) { try KeyExchange.sharedSecret(a.secretKey, [1] + [UInt8](repeating: 0, count: 31)) }
    }

    @Test func keyExchange_wrongLengthKeys_areRejected() {
        let a = KeyExchange.KeyPair()
        #expect(throws: SodiumError.invalidLength(what: "X25519 public key", expected: 32, actual: 31)) {
            try KeyExchange.sharedSecret(a.secretKey, [UInt8](repeating: 9, count: 31))
        }
        // A short secret key would make libsodium read past its buffer.
        #expect(throws: SodiumError.invalidLength(what: "X25519 secret key", expected: 32, actual: 16)) {
            try KeyExchange.sharedSecret(SecureBytes.random(16), a.publicKey)
        }
    }

    @Test func keyExchange_publicKeyOfShortSecretKey_stopsRatherThanReadingPastIt() async {
        await #expect(processExitsWith: .failure) {
            _ = KeyExchange.publicKey(for: SecureBytes.random(16))
        }
        await #expect(processExitsWith: .failure) {
            _ = Signing.curve25519SecretKey(fromEd25519: SecureBytes.random(32))
        }
    }
}

@Suite struct SealedBoxTests {
    @Test func sealedBox_roundTrips() throws {
        let recipient = KeyExchange.KeyPair()
        for message in [[], utf8("x"), utf8("an invite to a conversation"), [UInt8](repeating: 0xAB, count: 70_000)] {
            let box = try SealedBox.seal(message, to: recipient.publicKey)
            #expect(box.count == message.count + SealedBox.overheadBytes)
            #expect(try SealedBox.open(box, with: recipient) == message)
        }
    }

    @Test func sealedBox_sealingTwice_givesDifferentBoxes() throws {
        let recipient = KeyExchange.KeyPair()
        #expect(try SealedBox.seal(utf8("same"), to: recipient.publicKey) != SealedBox.seal(utf8("same"), to: recipient.publicKey))
    }

    @Test func sealedBox_tampered_failsToOpen() throws {
        let recipient = KeyExchange.KeyPair()
        let box = try SealedBox.seal(utf8("grant"), to: recipient.publicKey)
        for index in [0, 31, 32, 47, box.count - 1] {
            #expect(throws: SodiumError.decryptionFailed, "byte \(index)") { try SealedBox.open(flipping(box, at: index), with: recipient) }
        }
        #expect(throws: SodiumError.decryptionFailed) { try SealedBox.open(Array(box.dropLast()), with: recipient) }
        #expect(throws: SodiumError.decryptionFailed) { try SealedBox.open(Array(box.prefix(10)), with: recipient) }
    }

    @Test func sealedBox_forAnotherRecipient_failsToOpen() throws {
        let box = try SealedBox.seal(utf8("grant"), to: KeyExchange.KeyPair().publicKey)
        #expect(throws: SodiumError.decryptionFailed) { try SealedBox.open(box, with: KeyExchange.KeyPair()) }
    }

    @Test func sealedBox_toWrongLengthKey_isRejected() {
        #expect(throws: SodiumError.invalidLength(what: "X25519 public key", expected: 32, actual: 33)) {
            try SealedBox.seal(utf8("x"), to: [UInt8](repeating: 9, count: 33))
        }
    }
}
