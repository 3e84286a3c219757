import CSodium

/// Anonymous public-key encryption (`crypto_box_seal`): invites and epoch-key grants that only the
/// recipient can open. Keys are X25519 (convert Ed25519 identities with `Signing`).
public enum SealedBox {
    public static var overheadBytes: Int { parley_crypto_box_sealbytes() }

    /// Encrypts `message` to `recipientPublicKey` (X25519).
    public static func seal(_ message: [UInt8], to recipientPublicKey: [UInt8]) throws(SodiumError) -> [UInt8] {
        guard recipientPublicKey.count == KeyExchange.publicKeyBytes else {
            throw .invalidLength(what: "X25519 public key", expected: KeyExchange.publicKeyBytes, actual: recipientPublicKey.count)
        }
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: message.count + overheadBytes)
        let rc = out.withUnsafeMutableBytes { o in
            message.withUnsafeBytes { m in
                recipientPublicKey.withUnsafeBytes { pk in
                    crypto_box_seal(o.u8, m.u8, UInt64(m.count), pk.u8)
                }
            }
        }
        guard rc == 0 else { throw .invalidPublicKey }
        return out
    }

    /// Opens a sealed box addressed to `keyPair`; throws `.decryptionFailed` if it was not, or was changed.
    public static func open(_ box: [UInt8], with keyPair: KeyExchange.KeyPair) throws(SodiumError) -> [UInt8] {
        guard box.count >= overheadBytes else { throw .decryptionFailed }
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: box.count - overheadBytes)
        let rc = out.withUnsafeMutableBytes { o in
            box.withUnsafeBytes { b in
                keyPair.publicKey.withUnsafeBytes { pk in
                    keyPair.secretKey.withUnsafeBytes { sk in
                        crypto_box_seal_open(
                            o.u8, b.u8, UInt64(b.count),
                            pk.u8, sk.u8)
                    }
                }
            }
        }
        guard rc == 0 else { throw .decryptionFailed }
        return out
    }
}
