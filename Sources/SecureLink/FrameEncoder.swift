import Sodium

/// Encrypts the outgoing direction of a link: a secretstream header, then length-prefixed frames.
///
/// Wire layout of one direction (after handshake message 4):
///
/// | bytes | field                                                                        |
/// |-------|------------------------------------------------------------------------------|
/// |    24 | secretstream header, once, in clear ("doesn't have to be secret")            |
/// |     4 | frame 1: `L`, the ciphertext length, u32 big-endian (17 ≤ L ≤ max + 17)      |
/// |     L | frame 1: `crypto_secretstream_xchacha20poly1305_push(plaintext, ad: the 4 length bytes, tag)` |
/// |   ... | frame 2, 3, ... the same way                                                 |
///
/// Tags: MESSAGE for ordinary frames; REKEY on every `rekeyInterval`-th frame and on the frame
/// after `requestRekey()` (libsodium then rekeys both ends itself, at the same position: no call
/// is needed on either side); FINAL on the goodbye, whose plaintext is empty or one reason byte.
/// Binding the length as additional data makes a changed length fail authentication.
///
/// The shell MUST write `header` before anything else. The type is non-copyable because it owns
/// the stream's C state, which copies would share while counting frames apart. One owner, not
/// thread-safe.
public struct FrameEncoder: ~Copyable {
    public let configuration: FrameConfiguration
    /// The 24 bytes that open the stream; write them first, once.
    public let header: [UInt8]
    /// Frames encoded so far (the goodbye included).
    public private(set) var framesEncoded: UInt64 = 0

    private let pusher: SecretStream.Pusher
    private var framesSinceRekey: UInt64 = 0
    private var rekeyRequested = false
    private var saidGoodbye = false

    /// An encoder for the stream keyed by `key` (32 bytes).
    public init(key: SecureBytes, configuration: FrameConfiguration = FrameConfiguration()) {
        do {
            pusher = try SecretStream.Pusher(key: key)
        } catch {
            preconditionFailure("secretstream key must be \(SecretStream.keyBytes) bytes: \(error)")
        }
        header = pusher.header
        self.configuration = configuration
    }

    /// The encoder of our direction of a link (its `sendingKey`).
    public init(for result: HandshakeResult, configuration: FrameConfiguration = FrameConfiguration()) {
        self.init(key: result.sendingKey, configuration: configuration)
    }

    /// The bytes of one frame carrying `plaintext`.
    ///
    /// Throws `.tooLarge` over the configured limit (split the payload first) and
    /// `.afterGoodbye` once the goodbye was encoded.
    public mutating func encode(_ plaintext: [UInt8]) throws(FrameError) -> [UInt8] {
        guard !saidGoodbye else { throw .afterGoodbye }
        guard plaintext.count <= configuration.maxPlaintextBytes else {
            throw .tooLarge(length: plaintext.count, limit: configuration.maxPlaintextBytes)
        }
        framesSinceRekey += 1
        let rekey = rekeyRequested || framesSinceRekey >= configuration.rekeyInterval
        if rekey {
            framesSinceRekey = 0
            rekeyRequested = false
        }
        return seal(plaintext, tag: rekey ? .rekey : .message)
    }

    /// Makes the next frame carry the REKEY tag (e.g. on a timer, for forward secrecy within a link).
    public mutating func requestRekey() {
        rekeyRequested = true
    }

    /// The last frame of the stream: FINAL tag, plaintext empty or `reason`. Nothing may follow.
    public mutating func encodeGoodbye(reason: UInt8? = nil) throws(FrameError) -> [UInt8] {
        guard !saidGoodbye else { throw .afterGoodbye }
        saidGoodbye = true
        return seal(reason.map { [$0] } ?? [], tag: .final)
    }

    private mutating func seal(_ plaintext: [UInt8], tag: SecretStream.Tag) -> [UInt8] {
        let lengthField = FrameFormat.lengthField(plaintext.count + FrameFormat.overheadBytes)
        let ciphertext: [UInt8]
        do {
            ciphertext = try pusher.push(plaintext, additionalData: lengthField, tag: tag)
        } catch {
            preconditionFailure("secretstream push after FINAL: \(error)")  // `saidGoodbye` guards this
        }
        framesEncoded += 1
        return lengthField + ciphertext
    }
}
