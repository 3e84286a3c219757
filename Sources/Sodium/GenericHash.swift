import CSodium

/// BLAKE2b (`crypto_generichash`): op ids, body hashes, partition ids and digests.
public enum GenericHash {
    /// One-shot hash of `input` with an optional key, `outputBytes` long (16...64).
    public static func hash(_ input: UnsafeRawBufferPointer, key: [UInt8] = [], outputBytes: Int = 32) -> [UInt8] {
        // libsodium returns -1 and leaves the output untouched (all zeros) outside these limits.
        precondition(key.count <= 64 && (1...64).contains(outputBytes), "BLAKE2b key must be at most 64 bytes, output 1...64")
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: outputBytes)
        out.withUnsafeMutableBytes { o in
            key.withUnsafeBytes { k in
                _ = crypto_generichash(
                    o.u8, outputBytes,
                    input.u8, UInt64(input.count),
                    k.count == 0 ? nil : k.u8, k.count)
            }
        }
        return out
    }

    /// One-shot hash of `input` without a key, written into `output` (16...64 bytes, its whole
    /// length): the hot paths (op ids, body hashes) hash into a value on the stack, not an array.
    public static func hash(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
        precondition((16...64).contains(output.count), "BLAKE2b output into 16...64 bytes")
        Sodium.ensureInitialized()
        _ = crypto_generichash(output.u8, output.count, input.u8, UInt64(input.count), nil, 0)
    }

    /// One-shot hash of `input`.
    public static func hash(_ input: [UInt8], key: [UInt8] = [], outputBytes: Int = 32) -> [UInt8] {
        input.withUnsafeBytes { hash($0, key: key, outputBytes: outputBytes) }
    }

    /// Hash of a domain label followed by parts, e.g. `hash(domain: "parley/room/v1", ["lobby"])`.
    public static func hash(domain: String, _ parts: [[UInt8]], outputBytes: Int = 32) -> [UInt8] {
        let hasher = Hasher(outputBytes: outputBytes)
        hasher.update(Array(domain.utf8))
        for part in parts { hasher.update(part) }
        return hasher.finalize()
    }

    /// Incremental BLAKE2b for inputs fed in pieces (digests over many heads).
    ///
    /// The C state must be 64-byte aligned, so it lives in its own aligned allocation.
    public final class Hasher {
        private let state: OpaquePointer
        private let outputBytes: Int

        public init(outputBytes: Int = 32, key: [UInt8] = []) {
            precondition(key.count <= 64 && (1...64).contains(outputBytes), "BLAKE2b key must be at most 64 bytes, output 1...64")
            Sodium.ensureInitialized()
            self.outputBytes = outputBytes
            let raw = UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
            state = OpaquePointer(raw)
            key.withUnsafeBytes { k in
                _ = crypto_generichash_init(state, k.count == 0 ? nil : k.u8, k.count, outputBytes)
            }
        }

        deinit {
            sodium_memzero(UnsafeMutableRawPointer(state), crypto_generichash_statebytes())
            UnsafeMutableRawPointer(state).deallocate()
        }

        public func update(_ input: UnsafeRawBufferPointer) {
            _ = crypto_generichash_update(state, input.u8, UInt64(input.count))
        }

        public func update(_ input: [UInt8]) {
            input.withUnsafeBytes { update($0) }
        }

        /// The digest; the hasher must not be used afterwards.
        public func finalize() -> [UInt8] {
            var out = [UInt8](repeating: 0, count: outputBytes)
            _ = out.withUnsafeMutableBytes { crypto_generichash_final(state, $0.u8, outputBytes) }
            return out
        }
    }
}

/// SHA-256 (`crypto_hash_sha256`), needed only where a published protocol (the secret handshake) uses it.
public enum SHA256 {
    public static func hash(_ input: [UInt8]) -> [UInt8] {
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: 32)
        out.withUnsafeMutableBytes { o in
            input.withUnsafeBytes { i in
                _ = crypto_hash_sha256(o.u8, i.u8, UInt64(i.count))
            }
        }
        return out
    }
}
