import CSodium

/// XChaCha20-Poly1305 (IETF) authenticated encryption: message bodies under a conversation's epoch
/// key, key files under a passphrase. The 24-byte nonce is random per message, so it is safe to
/// generate with `Sodium.randomBytes` and store in front of the ciphertext.
public enum AEAD {
    public static let keyBytes = 32
    public static let nonceBytes = 24
    public static let tagBytes = 16

    /// `nonce ‖ ciphertext ‖ tag` of `message`, binding `additionalData`.
    public static func seal(_ message: [UInt8], additionalData: [UInt8] = [], key: SecureBytes) throws(SodiumError) -> [UInt8] {
        guard key.count == keyBytes else { throw .invalidLength(what: "AEAD key", expected: keyBytes, actual: key.count) }
        let nonce = Sodium.randomBytes(nonceBytes)
        var out = nonce + [UInt8](repeating: 0, count: message.count + tagBytes)
        out.withUnsafeMutableBytes { o in
            message.withUnsafeBytes { m in
                additionalData.withUnsafeBytes { ad in
                    key.withUnsafeBytes { k in
                        let base = o.u8
                        _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                            base + nonceBytes, nil, m.u8, UInt64(m.count),
                            ad.u8, UInt64(ad.count), nil,
                            base, k.u8)
                    }
                }
            }
        }
        return out
    }

    /// The message inside `nonce ‖ ciphertext ‖ tag`; throws `.decryptionFailed` on any change.
    public static func open(_ sealed: [UInt8], additionalData: [UInt8] = [], key: SecureBytes) throws(SodiumError) -> [UInt8] {
        guard key.count == keyBytes else { throw .invalidLength(what: "AEAD key", expected: keyBytes, actual: key.count) }
        guard sealed.count >= nonceBytes + tagBytes else { throw .decryptionFailed }
        var out = [UInt8](repeating: 0, count: sealed.count - nonceBytes - tagBytes)
        let rc = out.withUnsafeMutableBytes { o in
            sealed.withUnsafeBytes { s in
                additionalData.withUnsafeBytes { ad in
                    key.withUnsafeBytes { k in
                        let base = s.u8
                        return crypto_aead_xchacha20poly1305_ietf_decrypt(
                            o.u8, nil, nil,
                            base + nonceBytes, UInt64(s.count - nonceBytes),
                            ad.u8, UInt64(ad.count),
                            base, k.u8)
                    }
                }
            }
        }
        guard rc == 0 else { throw .decryptionFailed }
        return out
    }
}

/// `crypto_secretbox` (XSalsa20-Poly1305) with an explicit nonce: only for the secret handshake,
/// whose published wire format uses it with a zero nonce under single-use keys.
public enum SecretBox {
    public static let keyBytes = 32
    public static let nonceBytes = 24
    public static let macBytes = 16

    public static func seal(_ message: [UInt8], nonce: [UInt8], key: SecureBytes) -> [UInt8] {
        precondition(nonce.count == nonceBytes && key.count == keyBytes)
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: message.count + macBytes)
        out.withUnsafeMutableBytes { o in
            message.withUnsafeBytes { m in
                nonce.withUnsafeBytes { n in
                    key.withUnsafeBytes { k in
                        _ = crypto_secretbox_easy(
                            o.u8, m.u8, UInt64(m.count),
                            n.u8, k.u8)
                    }
                }
            }
        }
        return out
    }

    public static func open(_ box: [UInt8], nonce: [UInt8], key: SecureBytes) throws(SodiumError) -> [UInt8] {
        precondition(nonce.count == nonceBytes && key.count == keyBytes)
        guard box.count >= macBytes else { throw .decryptionFailed }
        var out = [UInt8](repeating: 0, count: box.count - macBytes)
        let rc = out.withUnsafeMutableBytes { o in
            box.withUnsafeBytes { b in
                nonce.withUnsafeBytes { n in
                    key.withUnsafeBytes { k in
                        crypto_secretbox_open_easy(
                            o.u8, b.u8, UInt64(b.count),
                            n.u8, k.u8)
                    }
                }
            }
        }
        guard rc == 0 else { throw .decryptionFailed }
        return out
    }
}
