import CSodium

/// Entry point of the Swift face of libsodium: initialisation and random bytes.
///
/// Every other type calls `Sodium.ensureInitialized()` before its first C call, so callers
/// never have to remember `sodium_init`.
public enum Sodium {
    /// Initialises libsodium once per process; cheap after the first call.
    public static func ensureInitialized() {
        _ = initialized
    }

    private static let initialized: Bool = {
        guard sodium_init() >= 0 else { preconditionFailure("libsodium could not be initialised") }
        return true
    }()

    /// `count` bytes from the operating system's CSPRNG.
    public static func randomBytes(_ count: Int) -> [UInt8] {
        ensureInitialized()
        var bytes = [UInt8](repeating: 0, count: count)
        if count > 0 { bytes.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) } }
        return bytes
    }

    /// A uniformly random integer in `0..<upperBound`.
    public static func randomUniform(_ upperBound: UInt32) -> UInt32 {
        ensureInitialized()
        return randombytes_uniform(upperBound)
    }

    /// Compares two byte strings in constant time (for MACs and keys).
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        ensureInitialized()
        return a.withUnsafeBytes { pa in b.withUnsafeBytes { pb in sodium_memcmp(pa.baseAddress, pb.baseAddress, a.count) == 0 } }
    }

    /// Lowercase hex of `bytes` (for logs and test vectors; never for keys).
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits: [Character] = Array("0123456789abcdef")
        var text = ""
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return text
    }

    /// Bytes from hex text; nil when the text is not even-length hex.
    public static func bytes(hex: String) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(hex.utf8.count / 2)
        var high: UInt8?
        for c in hex.utf8 {
            let v: UInt8
            switch c {
            case 0x30...0x39: v = c - 0x30
            case 0x61...0x66: v = c - 0x61 + 10
            case 0x41...0x46: v = c - 0x41 + 10
            default: return nil
            }
            if let h = high { out.append(h << 4 | v); high = nil } else { high = v }
        }
        return high == nil ? out : nil
    }
}

/// Errors of the Sodium module.
public enum SodiumError: Error, Equatable, Sendable {
    /// A key, nonce or header had the wrong length for the primitive.
    case invalidLength(what: String, expected: Int, actual: Int)
    /// Authenticated decryption failed: wrong key, or the data was changed.
    case decryptionFailed
    /// A public key is not a valid point (or is of low order) and cannot be used.
    case invalidPublicKey
    /// Password hashing failed (usually out of memory for the chosen limits).
    case passwordHashFailed
    /// A secretstream was used after its final message, or a message arrived after the final tag.
    case streamFinished
}
