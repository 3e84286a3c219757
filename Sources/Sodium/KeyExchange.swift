import CSodium

/// X25519 Diffie-Hellman (`crypto_scalarmult`), used by the link handshake.
public enum KeyExchange {
    public static let publicKeyBytes = 32
    public static let secretKeyBytes = 32

    /// An ephemeral or converted X25519 key pair.
    public struct KeyPair: Sendable {
        public let publicKey: [UInt8]
        public let secretKey: SecureBytes

        /// A fresh random key pair.
        public init() {
            let sk = SecureBytes.random(secretKeyBytes)
            publicKey = KeyExchange.publicKey(for: sk)
            secretKey = sk
        }

        /// A key pair for a given secret scalar.
        public init(secretKey: SecureBytes) {
            publicKey = KeyExchange.publicKey(for: secretKey)
            self.secretKey = secretKey
        }
    }

    /// The public key of an X25519 secret key.
    public static func publicKey(for secretKey: SecureBytes) -> [UInt8] {
        precondition(secretKey.count == secretKeyBytes, "X25519 secret key must be 32 bytes")
        Sodium.ensureInitialized()
        var pk = [UInt8](repeating: 0, count: publicKeyBytes)
        secretKey.withUnsafeBytes { sk in
            _ = pk.withUnsafeMutableBytes { crypto_scalarmult_base($0.u8, sk.u8) }
        }
        return pk
    }

    /// The shared secret `secretKey · publicKey`. Throws `.invalidPublicKey` for low-order points
    /// (libsodium refuses an all-zero result), which defeats weak-key attacks on the handshake.
    public static func sharedSecret(_ secretKey: SecureBytes, _ publicKey: [UInt8]) throws(SodiumError) -> SecureBytes {
        guard publicKey.count == publicKeyBytes else { throw .invalidLength(what: "X25519 public key", expected: publicKeyBytes, actual: publicKey.count) }
        guard secretKey.count == secretKeyBytes else { throw .invalidLength(what: "X25519 secret key", expected: secretKeyBytes, actual: secretKey.count) }
        Sodium.ensureInitialized()
        var rc: Int32 = 0
        let shared = SecureBytes(count: 32) { out in
            secretKey.withUnsafeBytes { sk in
                publicKey.withUnsafeBytes { pk in
                    rc = crypto_scalarmult(out.u8, sk.u8, pk.u8)
                }
            }
        }
        guard rc == 0 else { throw .invalidPublicKey }
        return shared
    }
}
