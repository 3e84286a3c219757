import CSodium

/// Ed25519 signatures (`crypto_sign_*`): the identity of a user and the seal on every operation.
public enum Signing {
    public static let publicKeyBytes = 32
    public static let secretKeyBytes = 64
    public static let seedBytes = 32
    public static let signatureBytes = 64

    /// An Ed25519 key pair. The secret key (seed ‖ public key, 64 bytes) lives in `SecureBytes`.
    public struct KeyPair: Sendable {
        public let publicKey: [UInt8]
        public let secretKey: SecureBytes

        /// A fresh random key pair.
        public init() {
            Sodium.ensureInitialized()
            var pk = [UInt8](repeating: 0, count: publicKeyBytes)
            let sk = SecureBytes(count: secretKeyBytes) { skBuf in
                _ = pk.withUnsafeMutableBytes { crypto_sign_keypair($0.u8, skBuf.u8) }
            }
            publicKey = pk
            secretKey = sk
        }

        /// The key pair determined by a 32-byte seed (known-answer tests, key files).
        public init(seed: [UInt8]) throws(SodiumError) {
            guard seed.count == seedBytes else { throw .invalidLength(what: "Ed25519 seed", expected: seedBytes, actual: seed.count) }
            Sodium.ensureInitialized()
            var pk = [UInt8](repeating: 0, count: publicKeyBytes)
            let sk = SecureBytes(count: secretKeyBytes) { skBuf in
                _ = pk.withUnsafeMutableBytes { pkBuf in
                    seed.withUnsafeBytes { s in
                        crypto_sign_seed_keypair(pkBuf.u8, skBuf.u8, s.u8)
                    }
                }
            }
            publicKey = pk
            secretKey = sk
        }

        /// The 32-byte seed (first half of the secret key), for storing the key pair.
        public var seed: SecureBytes {
            secretKey.withUnsafeBytes { sk in SecureBytes(count: seedBytes) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: sk[0..<seedBytes])) } }
        }

        /// Signs `message` (detached signature, 64 bytes).
        public func sign(_ message: UnsafeRawBufferPointer) -> [UInt8] {
            var signature = [UInt8](repeating: 0, count: signatureBytes)
            secretKey.withUnsafeBytes { sk in
                _ = signature.withUnsafeMutableBytes { sig in
                    crypto_sign_detached(
                        sig.u8, nil,
                        message.u8, UInt64(message.count),
                        sk.u8)
                }
            }
            return signature
        }

        /// Signs `message` (detached signature, 64 bytes).
        public func sign(_ message: [UInt8]) -> [UInt8] {
            message.withUnsafeBytes { sign($0) }
        }
    }

    /// Whether `signature` is `publicKey`'s valid Ed25519 signature of `message`.
    /// Wrong lengths are simply invalid.
    public static func isValidSignature(_ signature: UnsafeRawBufferPointer, for message: UnsafeRawBufferPointer, publicKey: UnsafeRawBufferPointer) -> Bool {
        guard signature.count == signatureBytes, publicKey.count == publicKeyBytes else { return false }
        Sodium.ensureInitialized()
        return crypto_sign_verify_detached(
            signature.u8,
            message.u8, UInt64(message.count),
            publicKey.u8) == 0
    }

    /// Whether `signature` is `publicKey`'s valid Ed25519 signature of `message`.
    public static func isValidSignature(_ signature: [UInt8], for message: [UInt8], publicKey: [UInt8]) -> Bool {
        signature.withUnsafeBytes { s in message.withUnsafeBytes { m in publicKey.withUnsafeBytes { p in isValidSignature(s, for: m, publicKey: p) } } }
    }

    /// The X25519 public key for an Ed25519 public key (for sealed boxes and the handshake).
    /// Throws for keys that are not valid points.
    public static func curve25519PublicKey(fromEd25519 publicKey: [UInt8]) throws(SodiumError) -> [UInt8] {
        guard publicKey.count == publicKeyBytes else { throw .invalidLength(what: "Ed25519 public key", expected: publicKeyBytes, actual: publicKey.count) }
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: KeyExchange.publicKeyBytes)
        let rc = out.withUnsafeMutableBytes { o in
            publicKey.withUnsafeBytes { p in
                crypto_sign_ed25519_pk_to_curve25519(o.u8, p.u8)
            }
        }
        guard rc == 0 else { throw .invalidPublicKey }
        return out
    }

    /// The X25519 secret key for an Ed25519 secret key.
    public static func curve25519SecretKey(fromEd25519 secretKey: SecureBytes) -> SecureBytes {
        precondition(secretKey.count == secretKeyBytes, "Ed25519 secret key must be 64 bytes")
        return SecureBytes(count: KeyExchange.secretKeyBytes) { out in
            secretKey.withUnsafeBytes { sk in
                _ = crypto_sign_ed25519_sk_to_curve25519(out.u8, sk.u8)
            }
        }
    }
}
