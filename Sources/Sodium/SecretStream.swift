import CSodium

/// `crypto_secretstream_xchacha20poly1305`: one encrypted, ordered, authenticated stream per link
/// direction. Reordering, dropping, duplicating or changing a message makes `pull` throw, and a
/// stream cannot be cut short unnoticed because the last message carries the final tag.
public enum SecretStream {
    public static var keyBytes: Int { parley_secretstream_keybytes() }
    public static var headerBytes: Int { parley_secretstream_headerbytes() }
    /// Bytes added to each message (1 tag byte + 16-byte MAC).
    public static var overheadBytes: Int { parley_secretstream_abytes() }

    /// What a message means for the stream.
    public enum Tag: Sendable, Equatable {
        case message, rekey, final

        var raw: UInt8 {
            switch self {
            case .message: parley_secretstream_tag_message()
            case .rekey: parley_secretstream_tag_rekey()
            case .final: parley_secretstream_tag_final()
            }
        }
    }

    /// The sending half. Not thread-safe: one owner.
    public final class Pusher {
        private let state: UnsafeMutablePointer<crypto_secretstream_xchacha20poly1305_state>
        /// The header the receiver needs to start pulling; send it first.
        public let header: [UInt8]
        private var finished = false

        public init(key: SecureBytes) throws(SodiumError) {
            guard key.count == SecretStream.keyBytes else { throw .invalidLength(what: "secretstream key", expected: SecretStream.keyBytes, actual: key.count) }
            Sodium.ensureInitialized()
            let state = UnsafeMutablePointer<crypto_secretstream_xchacha20poly1305_state>.allocate(capacity: 1)
            var header = [UInt8](repeating: 0, count: SecretStream.headerBytes)
            header.withUnsafeMutableBytes { h in
                key.withUnsafeBytes { k in
                    _ = crypto_secretstream_xchacha20poly1305_init_push(state, h.u8, k.u8)
                }
            }
            self.state = state
            self.header = header
        }

        deinit {
            sodium_memzero(state, MemoryLayout<crypto_secretstream_xchacha20poly1305_state>.size)
            state.deallocate()
        }

        /// Encrypts one message, binding `additionalData` (e.g. the frame length).
        public func push(_ message: UnsafeRawBufferPointer, additionalData: UnsafeRawBufferPointer, tag: Tag = .message) throws(SodiumError) -> [UInt8] {
            guard !finished else { throw .streamFinished }
            var out = [UInt8](repeating: 0, count: message.count + SecretStream.overheadBytes)
            _ = out.withUnsafeMutableBytes { o in
                crypto_secretstream_xchacha20poly1305_push(
                    state, o.u8, nil,
                    message.u8, UInt64(message.count),
                    additionalData.u8, UInt64(additionalData.count), tag.raw)
            }
            if tag == .final { finished = true }
            return out
        }

        public func push(_ message: [UInt8], additionalData: [UInt8] = [], tag: Tag = .message) throws(SodiumError) -> [UInt8] {
            let result = message.withUnsafeBytes { m in
                additionalData.withUnsafeBytes { ad in Result { () throws(SodiumError) in try push(m, additionalData: ad, tag: tag) } }
            }
            return try result.get()
        }

        /// Rekeys the stream without sending anything (the receiver must call `rekey()` at the same point).
        public func rekey() {
            crypto_secretstream_xchacha20poly1305_rekey(state)
        }
    }

    /// The receiving half. Not thread-safe: one owner.
    public final class Puller {
        private let state: UnsafeMutablePointer<crypto_secretstream_xchacha20poly1305_state>
        private var finished = false

        /// Starts pulling the stream whose header is `header`.
        public init(key: SecureBytes, header: [UInt8]) throws(SodiumError) {
            guard key.count == SecretStream.keyBytes else { throw .invalidLength(what: "secretstream key", expected: SecretStream.keyBytes, actual: key.count) }
            guard header.count == SecretStream.headerBytes else {
                throw .invalidLength(what: "secretstream header", expected: SecretStream.headerBytes, actual: header.count)
            }
            Sodium.ensureInitialized()
            let state = UnsafeMutablePointer<crypto_secretstream_xchacha20poly1305_state>.allocate(capacity: 1)
            let rc = header.withUnsafeBytes { h in
                key.withUnsafeBytes { k in
                    crypto_secretstream_xchacha20poly1305_init_pull(state, h.u8, k.u8)
                }
            }
            guard rc == 0 else { state.deallocate(); throw .decryptionFailed }
            self.state = state
        }

        deinit {
            sodium_memzero(state, MemoryLayout<crypto_secretstream_xchacha20poly1305_state>.size)
            state.deallocate()
        }

        /// Decrypts the next message; throws `.decryptionFailed` if it is not exactly the next one sent.
        public func pull(_ ciphertext: UnsafeRawBufferPointer, additionalData: UnsafeRawBufferPointer) throws(SodiumError) -> (message: [UInt8], tag: Tag) {
            guard !finished else { throw .streamFinished }
            guard ciphertext.count >= SecretStream.overheadBytes else { throw .decryptionFailed }
            var out = [UInt8](repeating: 0, count: ciphertext.count - SecretStream.overheadBytes)
            var rawTag: UInt8 = 0
            let rc = out.withUnsafeMutableBytes { o in
                crypto_secretstream_xchacha20poly1305_pull(
                    state, o.u8, nil, &rawTag,
                    ciphertext.u8, UInt64(ciphertext.count),
                    additionalData.u8, UInt64(additionalData.count))
            }
            guard rc == 0 else { throw .decryptionFailed }
            let tag: Tag
            switch rawTag {
            case parley_secretstream_tag_final(): tag = .final; finished = true
            case parley_secretstream_tag_rekey(): tag = .rekey
            default: tag = .message
            }
            return (out, tag)
        }

        public func pull(_ ciphertext: [UInt8], additionalData: [UInt8] = []) throws(SodiumError) -> (message: [UInt8], tag: Tag) {
            let result = ciphertext.withUnsafeBytes { c in
                additionalData.withUnsafeBytes { ad in Result { () throws(SodiumError) in try pull(c, additionalData: ad) } }
            }
            return try result.get()
        }

        /// Rekeys in step with the sender's `rekey()`.
        public func rekey() {
            crypto_secretstream_xchacha20poly1305_rekey(state)
        }
    }
}
