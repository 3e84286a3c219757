import CSodium

/// The ristretto255 prime-order group (`crypto_core_ristretto255`, `crypto_scalarmult_ristretto255`):
/// the group of the pairing PAKE (docs/DESIGN.md §4.4), where every valid encoding is a group
/// element and there are no small-order points to check for.
public enum Ristretto255 {
    /// An encoded group element.
    public static let pointBytes = 32
    /// A scalar (an integer modulo the group order), little-endian.
    public static let scalarBytes = 32
    /// The input of `hashToGroup`: a 64-byte uniform hash.
    public static let hashBytes = 64

    /// The element a 64-byte uniform hash maps to (Elligator, `crypto_core_ristretto255_from_hash`):
    /// nobody knows its discrete logarithm, which makes it a safe PAKE generator.
    public static func hashToGroup(_ hash: [UInt8]) -> [UInt8] {
        precondition(hash.count == hashBytes, "ristretto255 from_hash needs 64 bytes")
        Sodium.ensureInitialized()
        var point = [UInt8](repeating: 0, count: pointBytes)
        point.withUnsafeMutableBytes { p in
            hash.withUnsafeBytes { h in
                _ = crypto_core_ristretto255_from_hash(p.u8, h.u8)
            }
        }
        return point
    }

    /// A uniformly random non-zero scalar.
    public static func randomScalar() -> SecureBytes {
        Sodium.ensureInitialized()
        return SecureBytes(count: scalarBytes) { crypto_core_ristretto255_scalar_random($0.u8) }
    }

    /// `scalar · point`. Throws `.invalidPublicKey` when `point` is not a valid encoding or the
    /// product is the identity (libsodium returns -1), so a peer cannot force a known result.
    /// The product is returned as `SecureBytes` because it is a shared secret when `point` is a
    /// peer's; take `.bytes` for a public value.
    public static func scalarMult(_ scalar: SecureBytes, _ point: [UInt8]) throws(SodiumError) -> SecureBytes {
        guard scalar.count == scalarBytes else { throw .invalidLength(what: "ristretto255 scalar", expected: scalarBytes, actual: scalar.count) }
        guard point.count == pointBytes else { throw .invalidLength(what: "ristretto255 point", expected: pointBytes, actual: point.count) }
        Sodium.ensureInitialized()
        var rc: Int32 = 0
        let product = SecureBytes(count: pointBytes) { out in
            scalar.withUnsafeBytes { n in
                point.withUnsafeBytes { p in
                    rc = crypto_scalarmult_ristretto255(out.u8, n.u8, p.u8)
                }
            }
        }
        guard rc == 0 else { throw .invalidPublicKey }
        return product
    }

    /// Whether `point` is the canonical encoding of a group element.
    public static func isValidPoint(_ point: [UInt8]) -> Bool {
        guard point.count == pointBytes else { return false }
        Sodium.ensureInitialized()
        return point.withUnsafeBytes { crypto_core_ristretto255_is_valid_point($0.u8) == 1 }
    }
}
