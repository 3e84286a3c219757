import Sodium
import Testing

/// One Ed25519 test vector of RFC 8032 §7.1.
struct Ed25519Vector: Sendable, CustomTestStringConvertible {
    let name: String
    let seed: String
    let publicKey: String
    let message: String
    let signature: String
    var testDescription: String { name }
}

/// RFC 8032 §7.1, TEST 1 (empty message) and TEST 2 (one byte).
let rfc8032Vectors = [
    Ed25519Vector(
        name: "TEST 1",
        seed: "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
        publicKey: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        message: "",
        signature: "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
            + "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"),
    Ed25519Vector(
        name: "TEST 2",
        seed: "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
        publicKey: "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
        message: "72",
        signature: "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
            + "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"),
]

@Suite struct SigningTests {
    @Test(arguments: rfc8032Vectors)
    func signing_rfc8032Vector_givesPublishedKeyAndSignature(vector: Ed25519Vector) throws {
        let keyPair = try Signing.KeyPair(seed: try hexBytes(vector.seed))
        #expect(Sodium.hex(keyPair.publicKey) == vector.publicKey)
        #expect(Sodium.hex(keyPair.seed.bytes) == vector.seed)
        let message = try hexBytes(vector.message)
        let signature = keyPair.sign(message)
        #expect(Sodium.hex(signature) == vector.signature)
        #expect(Signing.isValidSignature(signature, for: message, publicKey: keyPair.publicKey))
    }

    @Test(arguments: rfc8032Vectors)
    func signing_rfc8032Vector_withAnyChange_doesNotVerify(vector: Ed25519Vector) throws {
        let publicKey = try hexBytes(vector.publicKey)
        let message = try hexBytes(vector.message)
        let signature = try hexBytes(vector.signature)
        #expect(Signing.isValidSignature(signature, for: message, publicKey: publicKey))

        #expect(!Signing.isValidSignature(signature, for: message + [0], publicKey: publicKey))
        if !message.isEmpty {
            #expect(!Signing.isValidSignature(signature, for: flipping(message, at: 0), publicKey: publicKey))
        }
        for index in [0, 31, 32, 63] {
            #expect(!Signing.isValidSignature(flipping(signature, at: index), for: message, publicKey: publicKey), "signature byte \(index)")
        }
        for index in [0, 17, 31] {
            #expect(!Signing.isValidSignature(signature, for: message, publicKey: flipping(publicKey, at: index, bit: 1)), "key byte \(index)")
        }
    }

    @Test func signing_wrongLengths_areSimplyInvalid() throws {
        let keyPair = Signing.KeyPair()
        let signature = keyPair.sign([1, 2, 3])
        #expect(!Signing.isValidSignature(Array(signature.dropLast()), for: [1, 2, 3], publicKey: keyPair.publicKey))
        #expect(!Signing.isValidSignature(signature, for: [1, 2, 3], publicKey: Array(keyPair.publicKey.dropLast())))
        #expect(throws: SodiumError.invalidLength(what: "Ed25519 seed", expected: 32, actual: 33)) {
            try Signing.KeyPair(seed: [UInt8](repeating: 0, count: 33))
        }
    }

    @Test func signing_randomKeyPair_signsAndVerifies() throws {
        let keyPair = Signing.KeyPair()
        let message = utf8("an operation envelope")
        let signature = keyPair.sign(message)
        #expect(signature.count == Signing.signatureBytes)
        #expect(Signing.isValidSignature(signature, for: message, publicKey: keyPair.publicKey))
        #expect(!Signing.isValidSignature(signature, for: message, publicKey: Signing.KeyPair().publicKey))
        // The seed determines the pair.
        #expect(try Signing.KeyPair(seed: keyPair.seed.bytes).publicKey == keyPair.publicKey)
    }

    @Test func signing_ed25519ToCurve25519_convertedKeysOpenSealedBoxes() throws {
        let keyPair = try Signing.KeyPair(seed: try hexBytes(rfc8032Vectors[0].seed))
        let boxPublicKey = try Signing.curve25519PublicKey(fromEd25519: keyPair.publicKey)
        let boxSecretKey = Signing.curve25519SecretKey(fromEd25519: keyPair.secretKey)
        // The converted secret key's public key is the converted public key.
        #expect(KeyExchange.publicKey(for: boxSecretKey) == boxPublicKey)
        let box = try SealedBox.seal(utf8("epoch key"), to: boxPublicKey)
        #expect(try SealedBox.open(box, with: KeyExchange.KeyPair(secretKey: boxSecretKey)) == utf8("epoch key"))
    }

    @Test func signing_ed25519ToCurve25519_refusesWrongLengthAndNonPoints() {
        #expect(throws: SodiumError.invalidLength(what: "Ed25519 public key", expected: 32, actual: 31)) {
            try Signing.curve25519PublicKey(fromEd25519: [UInt8](repeating: 9, count: 31))
        }
        // The all-zero encoding is a small-order point, which libsodium refuses to convert.
        #expect(throws: SodiumError.invalidPublicKey) {
            try Signing.curve25519PublicKey(fromEd25519: [UInt8](repeating: 0, count: 32))
        }
    }
}
