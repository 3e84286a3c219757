import Sodium

/// The formulas of Secure Scuttlebutt's secret handshake v1, one function per rule, in the
/// notation of the Scuttlebutt Protocol Guide ("Handshake"): lowercase `a`/`b` are the client's
/// and server's ephemeral X25519 keys, uppercase `A`/`B` their long-term Ed25519 keys (converted
/// to X25519 with `crypto_sign_ed25519_*_to_curve25519` for Diffie-Hellman), `N` the network key.
///
/// `Handshake` decides *when* each rule applies; this type only computes.
enum SHS {
    static let helloLength = 64
    static let clientAuthLength = 112  // 16 (MAC) + 64 (signature) + 32 (key), as secret-handshake's crypto.js
    static let serverAcceptLength = 80  // 16 (MAC) + 64 (signature)

    /// "This is the only secret box that ever uses the key", so the nonce may be all zeros.
    static let zeroNonce = [UInt8](repeating: 0, count: SecretBox.nonceBytes)

    // MARK: Messages 1 and 2

    /// `hmac(key: N, msg: eph_pk) ‖ eph_pk` (64 bytes); `hmac` is `crypto_auth`, HMAC-SHA-512-256.
    static func hello(ephemeralPublicKey: [UInt8], networkKey: NetworkKey) -> [UInt8] {
        Authenticator.tag(ephemeralPublicKey, key: networkKey.bytes) + ephemeralPublicKey
    }

    /// The ephemeral key inside a 64-byte hello, or nil when its HMAC fails under `networkKey`.
    static func ephemeralKey(ofHello hello: [UInt8], networkKey: NetworkKey) -> [UInt8]? {
        precondition(hello.count == helloLength)
        let tag = Array(hello[0..<32])
        let key = Array(hello[32..<64])
        return Authenticator.isValid(tag, for: key, key: networkKey.bytes) ? key : nil
    }

    // MARK: Message 3

    /// `sha256(N ‖ ab ‖ aB)`: the key of message 3.
    static func clientAuthKey(_ n: NetworkKey, ab: SecureBytes, aB: SecureBytes) -> SecureBytes {
        sha256Key { input in
            input += n.bytes
            append(ab, to: &input)
            append(aB, to: &input)
        }
    }

    /// What the client signs: `N ‖ B_pk ‖ sha256(ab)`.
    static func clientProofPayload(_ n: NetworkKey, serverKey: [UInt8], hashAB: [UInt8]) -> [UInt8] {
        n.bytes + serverKey + hashAB
    }

    /// `secretbox(nonce: 0, key: sha256(N ‖ ab ‖ aB), detached_signature_A ‖ A_pk)` (112 bytes).
    static func clientAuth(signatureA: [UInt8], clientKey: [UInt8], key: SecureBytes) -> [UInt8] {
        SecretBox.seal(signatureA + clientKey, nonce: zeroNonce, key: key)
    }

    // MARK: Message 4

    /// `sha256(N ‖ ab ‖ aB ‖ Ab)`: the key of message 4.
    static func serverAcceptKey(_ n: NetworkKey, ab: SecureBytes, aB: SecureBytes, Ab: SecureBytes) -> SecureBytes {
        sha256Key { input in
            input += n.bytes
            append(ab, to: &input)
            append(aB, to: &input)
            append(Ab, to: &input)
        }
    }

    /// What the server signs: `N ‖ detached_signature_A ‖ A_pk ‖ sha256(ab)`.
    static func serverProofPayload(_ n: NetworkKey, signatureA: [UInt8], clientKey: [UInt8], hashAB: [UInt8]) -> [UInt8] {
        n.bytes + signatureA + clientKey + hashAB
    }

    /// `secretbox(nonce: 0, key: sha256(N ‖ ab ‖ aB ‖ Ab), detached_signature_B)` (80 bytes).
    static func serverAccept(signatureB: [UInt8], key: SecureBytes) -> [UInt8] {
        SecretBox.seal(signatureB, nonce: zeroNonce, key: key)
    }

    // MARK: Hashing secrets

    /// `sha256(ab)`, which both signatures cover and which binds them to this session.
    static func hash(_ secret: SecureBytes) -> [UInt8] {
        var input: [UInt8] = []
        append(secret, to: &input)
        defer { wipe(&input) }
        return SHA256.hash(input)
    }

    /// SHA-256 of bytes built by `build`, as a key; the temporary copies are wiped.
    private static func sha256Key(_ build: (inout [UInt8]) -> Void) -> SecureBytes {
        var input: [UInt8] = []
        input.reserveCapacity(4 * 32)  // no reallocation, so no unwiped copy is left behind
        build(&input)
        var digest = SHA256.hash(input)
        defer {
            wipe(&input)
            wipe(&digest)
        }
        return SecureBytes(digest)
    }

    private static func append(_ secret: SecureBytes, to input: inout [UInt8]) {
        secret.withUnsafeBytes { input.append(contentsOf: $0) }
    }
}
