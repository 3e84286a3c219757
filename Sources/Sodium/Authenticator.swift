import CSodium

/// Message authentication with a shared key (`crypto_auth`, HMAC-SHA-512-256): beacons and the
/// first handshake messages prove knowledge of the network key.
public enum Authenticator {
    public static let keyBytes = 32
    public static let tagBytes = 32

    /// The 32-byte tag of `message` under `key`.
    public static func tag(_ message: [UInt8], key: [UInt8]) -> [UInt8] {
        precondition(key.count == keyBytes, "crypto_auth key must be 32 bytes")
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: tagBytes)
        out.withUnsafeMutableBytes { o in
            message.withUnsafeBytes { m in
                key.withUnsafeBytes { k in
                    _ = crypto_auth(o.u8, m.u8, UInt64(m.count), k.u8)
                }
            }
        }
        return out
    }

    /// Whether `tag` authenticates `message` under `key` (constant time).
    public static func isValid(_ tag: [UInt8], for message: [UInt8], key: [UInt8]) -> Bool {
        guard tag.count == tagBytes, key.count == keyBytes else { return false }
        Sodium.ensureInitialized()
        return tag.withUnsafeBytes { t in
            message.withUnsafeBytes { m in
                key.withUnsafeBytes { k in
                    crypto_auth_verify(t.u8, m.u8, UInt64(m.count), k.u8) == 0
                }
            }
        }
    }
}
