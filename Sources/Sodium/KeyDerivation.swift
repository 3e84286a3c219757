import CSodium

/// Subkeys from a master key (`crypto_kdf`, BLAKE2b): one master secret, many independent keys,
/// each named by an 8-character context and a number.
public enum KeyDerivation {
    public static let masterKeyBytes = 32

    /// Subkey number `id` of `masterKey` for `context` (exactly 8 ASCII characters, e.g. "parlself").
    public static func deriveKey(_ masterKey: SecureBytes, id: UInt64, context: String, bytes: Int = 32) -> SecureBytes {
        let ctx = Array(context.utf8)
        precondition(ctx.count == 8, "crypto_kdf context must be 8 bytes")
        precondition(masterKey.count == masterKeyBytes)
        Sodium.ensureInitialized()
        return SecureBytes(count: bytes) { out in
            masterKey.withUnsafeBytes { k in
                ctx.withUnsafeBytes { c in
                    _ = crypto_kdf_derive_from_key(
                        out.u8, bytes, id,
                        c.bindMemory(to: CChar.self).baseAddress!, k.u8)
                }
            }
        }
    }
}

/// Password hashing (`crypto_pwhash`, Argon2id): keys from passphrases, for key files and rooms
/// with a passphrase. Slow on purpose.
public enum PasswordHash {
    public static let saltBytes = 16

    /// Cost settings; stored next to what they protect so they can be raised later.
    public struct Cost: Sendable, Equatable {
        public var operations: UInt64
        public var memoryBytes: Int
        public init(operations: UInt64, memoryBytes: Int) {
            self.operations = operations
            self.memoryBytes = memoryBytes
        }
        /// libsodium's interactive limits (~64 MiB, fast enough for a login).
        public static let interactive = Cost(operations: 2, memoryBytes: 64 << 20)
        /// The minimum, for tests only.
        public static let minimum = Cost(operations: 1, memoryBytes: 8 << 10)
    }

    /// A `bytes`-long key from `passphrase` and `salt` (16 bytes).
    public static func deriveKey(passphrase: [UInt8], salt: [UInt8], cost: Cost = .interactive, bytes: Int = 32) throws(SodiumError) -> SecureBytes {
        guard salt.count == saltBytes else { throw .invalidLength(what: "pwhash salt", expected: saltBytes, actual: salt.count) }
        Sodium.ensureInitialized()
        var rc: Int32 = 0
        let key = SecureBytes(count: bytes) { out in
            passphrase.withUnsafeBytes { p in
                salt.withUnsafeBytes { s in
                    rc = crypto_pwhash(
                        out.u8, UInt64(bytes),
                        UnsafeRawPointer(p.u8).assumingMemoryBound(to: CChar.self), UInt64(p.count),
                        s.u8, cost.operations, cost.memoryBytes, crypto_pwhash_ALG_ARGON2ID13)
                }
            }
        }
        guard rc == 0 else { throw .passwordHashFailed }
        return key
    }
}
