import Sodium
import Testing

@Suite struct AEADTests {
    let key = SecureBytes.random(AEAD.keyBytes)
    let message = utf8("a message body under the epoch key")
    let additionalData = utf8("partition ‖ author ‖ seq")

    @Test func aead_roundTripsWithAndWithoutAdditionalData() throws {
        for message in [[], message, [UInt8](repeating: 7, count: 65_536)] {
            let sealed = try AEAD.seal(message, additionalData: additionalData, key: key)
            #expect(sealed.count == AEAD.nonceBytes + message.count + AEAD.tagBytes)
            #expect(try AEAD.open(sealed, additionalData: additionalData, key: key) == message)
        }
        let plain = try AEAD.seal(message, key: key)
        #expect(try AEAD.open(plain, key: key) == message)
    }

    @Test func aead_sealingTwice_usesFreshNonces() throws {
        let a = try AEAD.seal(message, key: key)
        let b = try AEAD.seal(message, key: key)
        #expect(a.prefix(AEAD.nonceBytes) != b.prefix(AEAD.nonceBytes))
        #expect(a != b)
    }

    @Test func aead_tamperedNonceCiphertextOrTag_failsToOpen() throws {
        let sealed = try AEAD.seal(message, additionalData: additionalData, key: key)
        let places = [
            ("nonce", 0), ("nonce end", AEAD.nonceBytes - 1), ("ciphertext", AEAD.nonceBytes),
            ("ciphertext end", sealed.count - AEAD.tagBytes - 1), ("tag", sealed.count - AEAD.tagBytes), ("tag end", sealed.count - 1),
        ]
        for (name, index) in places {
            #expect(throws: SodiumError.decryptionFailed, "\(name)") {
                try AEAD.open(flipping(sealed, at: index), additionalData: additionalData, key: key)
            }
        }
        #expect(throws: SodiumError.decryptionFailed) { try AEAD.open(Array(sealed.dropLast()), additionalData: additionalData, key: key) }
        #expect(throws: SodiumError.decryptionFailed) { try AEAD.open(sealed + [0], additionalData: additionalData, key: key) }
        #expect(throws: SodiumError.decryptionFailed) { try AEAD.open(Array(sealed.prefix(39)), additionalData: additionalData, key: key) }
    }

    @Test func aead_wrongAdditionalDataOrKey_failsToOpen() throws {
        let sealed = try AEAD.seal(message, additionalData: additionalData, key: key)
        #expect(throws: SodiumError.decryptionFailed) { try AEAD.open(sealed, additionalData: flipping(additionalData, at: 0), key: key) }
        #expect(throws: SodiumError.decryptionFailed) { try AEAD.open(sealed, key: key) }
        #expect(throws: SodiumError.decryptionFailed) {
            try AEAD.open(sealed, additionalData: additionalData, key: SecureBytes.random(AEAD.keyBytes))
        }
    }

    @Test func aead_wrongKeyLength_isInvalidLength() throws {
        let short = SecureBytes.random(16)
        let error = SodiumError.invalidLength(what: "AEAD key", expected: 32, actual: 16)
        #expect(throws: error) { try AEAD.seal(message, key: short) }
        let sealed = try AEAD.seal(message, key: key)
        #expect(throws: error) { try AEAD.open(sealed, key: short) }
    }
}

@Suite struct SecretBoxTests {
    @Test func secretBox_roundTripsAndRejectsTampering() throws {
        let key = SecureBytes.random(SecretBox.keyBytes)
        let nonce = [UInt8](repeating: 0, count: SecretBox.nonceBytes)
        let box = SecretBox.seal(utf8("handshake"), nonce: nonce, key: key)
        #expect(box.count == 9 + SecretBox.macBytes)
        #expect(try SecretBox.open(box, nonce: nonce, key: key) == utf8("handshake"))
        #expect(throws: SodiumError.decryptionFailed) { try SecretBox.open(flipping(box, at: 0), nonce: nonce, key: key) }
        #expect(throws: SodiumError.decryptionFailed) { try SecretBox.open(box, nonce: flipping(nonce, at: 23), key: key) }
        #expect(throws: SodiumError.decryptionFailed) { try SecretBox.open(Array(box.prefix(15)), nonce: nonce, key: key) }
    }
}
