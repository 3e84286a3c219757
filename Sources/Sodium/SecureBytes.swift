import CSodium

/// Secret key material: heap storage that is locked in memory where possible and zeroed on release.
///
/// Copies of the bytes made by callers (`withUnsafeBytes` is the only door) are the caller's
/// responsibility; the type never prints its contents.
public final class SecureBytes: @unchecked Sendable, CustomStringConvertible {
    // The buffer is written only in init; afterwards it is read-only, which makes sharing safe.
    private let pointer: UnsafeMutableRawBufferPointer

    /// Number of bytes held.
    public var count: Int { logicalCount }

    /// Takes a copy of `bytes`; the caller should wipe its own copy if it can.
    public init(_ bytes: [UInt8]) {
        Sodium.ensureInitialized()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 16)
        _ = sodium_mlock(buffer.baseAddress!, buffer.count)
        bytes.withUnsafeBytes { src in
            if let base = src.baseAddress { buffer.baseAddress!.copyMemory(from: base, byteCount: src.count) }
        }
        pointer = buffer
        logicalCount = bytes.count
    }

    /// Fills `count` bytes by calling `fill` on the locked buffer (no intermediate copy).
    public init(count: Int, fill: (UnsafeMutableRawBufferPointer) -> Void) {
        Sodium.ensureInitialized()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 16)
        _ = sodium_mlock(buffer.baseAddress!, buffer.count)
        fill(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count]))
        pointer = buffer
        logicalCount = count
    }

    /// `count` random bytes.
    public static func random(_ count: Int) -> SecureBytes {
        SecureBytes(count: count) { randombytes_buf($0.baseAddress!, $0.count) }
    }

    private let logicalCount: Int

    deinit {
        sodium_munlock(pointer.baseAddress!, pointer.count)  // munlock also zeroes
        sodium_memzero(pointer.baseAddress!, pointer.count)
        pointer.deallocate()
    }

    /// Read access to the secret bytes.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(rebasing: pointer[0..<logicalCount]))
    }

    /// A copy as an ordinary array, for storage in an encrypted file or tests.
    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    public var description: String { "SecureBytes(\(logicalCount) bytes, redacted)" }
}

extension SecureBytes: Equatable {
    public static func == (lhs: SecureBytes, rhs: SecureBytes) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return lhs.withUnsafeBytes { a in rhs.withUnsafeBytes { b in sodium_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 } }
    }
}
