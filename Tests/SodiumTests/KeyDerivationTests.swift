import Sodium
import Testing

@Suite struct KeyDerivationTests {
    let master = SecureBytes((0..<32).map { UInt8($0) })

    @Test func keyDerivation_sameInputs_giveSameKey() {
        let a = KeyDerivation.deriveKey(master, id: 1, context: "parlself")
        let b = KeyDerivation.deriveKey(SecureBytes(master.bytes), id: 1, context: "parlself")
        #expect(a == b)
        #expect(a.count == 32)
    }

    @Test func keyDerivation_differentIDContextOrMaster_giveDistinctKeys() {
        let keys = [
            KeyDerivation.deriveKey(master, id: 1, context: "parlself"),
            KeyDerivation.deriveKey(master, id: 2, context: "parlself"),
            KeyDerivation.deriveKey(master, id: 1, context: "parlroom"),
            KeyDerivation.deriveKey(master, id: 0, context: "parlself"),
            KeyDerivation.deriveKey(master, id: .max, context: "parlself"),
            KeyDerivation.deriveKey(SecureBytes.random(32), id: 1, context: "parlself"),
        ]
        let distinct = Set(keys.map { Sodium.hex($0.bytes) })
        #expect(distinct.count == keys.count)
    }

    @Test func keyDerivation_outputLength_followsRequest() {
        #expect(KeyDerivation.deriveKey(master, id: 1, context: "parlself", bytes: 16).count == 16)
        #expect(KeyDerivation.deriveKey(master, id: 1, context: "parlself", bytes: 64).count == 64)
    }
}

@Suite struct PasswordHashTests {
    let salt = [UInt8](repeating: 0x5A, count: PasswordHash.saltBytes)
    let passphrase = utf8("correct horse battery staple")

    @Test func passwordHash_sameInputs_giveSameKey() throws {
        let a = try PasswordHash.deriveKey(passphrase: passphrase, salt: salt, cost: .minimum)
        let b = try PasswordHash.deriveKey(passphrase: passphrase, salt: salt, cost: .minimum)
        #expect(a == b)
        #expect(a.count == 32)
    }

    @Test func passwordHash_differentSaltPassphraseOrCost_giveDifferentKeys() throws {
        let base = try PasswordHash.deriveKey(passphrase: passphrase, salt: salt, cost: .minimum)
        #expect(try PasswordHash.deriveKey(passphrase: passphrase, salt: flipping(salt, at: 15), cost: .minimum) != base)
        #expect(try PasswordHash.deriveKey(passphrase: passphrase + [0x21], salt: salt, cost: .minimum) != base)
        let dearer = PasswordHash.Cost(operations: 2, memoryBytes: PasswordHash.Cost.minimum.memoryBytes)
        #expect(try PasswordHash.deriveKey(passphrase: passphrase, salt: salt, cost: dearer) != base)
    }

    @Test func passwordHash_emptyPassphrase_stillDerivesAKey() throws {
        let key = try PasswordHash.deriveKey(passphrase: [], salt: salt, cost: .minimum, bytes: 16)
        #expect(key.count == 16)
    }

    @Test func passwordHash_wrongSaltLength_isInvalidLength() {
        #expect(throws: SodiumError.invalidLength(what: "pwhash salt", expected: 16, actual: 8)) {
            try PasswordHash.deriveKey(passphrase: passphrase, salt: [UInt8](repeating: 0, count: 8), cost: .minimum)
        }
    }

    @Test func passwordHash_impossibleCost_throwsRatherThanCrashing() {
        let belowMinimum = PasswordHash.Cost(operations: 0, memoryBytes: 1024)
        #expect(throws: SodiumError.passwordHashFailed) {
            try PasswordHash.deriveKey(passphrase: passphrase, salt: salt, cost: belowMinimum)
        }
    }
}
