import Sodium

/// Limits of a link's encrypted framing (`FrameEncoder`, `FrameDecoder`).
///
/// Both ends SHOULD use the same values: a decoder refuses frames over its own limit, and an
/// encoder refuses to produce them.
public struct FrameConfiguration: Sendable, Equatable {
    /// 1 MiB (docs/DESIGN.md §7).
    public static let defaultMaxPlaintextBytes = 1 << 20
    /// Frames between two automatic rekeys.
    public static let defaultRekeyInterval: UInt64 = 1 << 16

    /// The largest plaintext a frame may carry.
    public var maxPlaintextBytes: Int
    /// Every `rekeyInterval`-th frame carries secretstream's REKEY tag.
    public var rekeyInterval: UInt64

    public init(maxPlaintextBytes: Int = defaultMaxPlaintextBytes, rekeyInterval: UInt64 = defaultRekeyInterval) {
        precondition(
            maxPlaintextBytes >= 0 && maxPlaintextBytes <= Int(UInt32.max) - FrameFormat.overheadBytes,
            "the ciphertext length must fit the u32 length field")
        precondition(rekeyInterval > 0, "rekeyInterval counts frames and must be positive")
        self.maxPlaintextBytes = maxPlaintextBytes
        self.rekeyInterval = rekeyInterval
    }
}

/// What a `FrameDecoder` yields.
public enum FrameEvent: Sendable, Equatable {
    /// One frame's plaintext, authenticated and in order.
    case frame([UInt8])
    /// The peer ended its stream cleanly (secretstream's FINAL tag), with an optional reason
    /// byte. A connection that closes without this was cut short.
    case goodbye(reason: UInt8?)
}

/// Why framing failed. Every case is fatal for the link: the shell closes the connection.
public enum FrameError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A frame is over `FrameConfiguration.maxPlaintextBytes`; `length` is its plaintext size.
    /// The decoder raises it from the 4 length bytes alone, before buffering the frame.
    case tooLarge(length: Int, limit: Int)
    /// The length field is below the 17 bytes every ciphertext carries (tag byte and MAC).
    case tooShort(length: Int)
    /// A frame did not authenticate: a changed bit or length, a frame reordered, duplicated
    /// or dropped, or a stream under another key or header.
    case authenticationFailed
    /// Bytes arrived after the peer's goodbye, or a frame was encoded after our own.
    case afterGoodbye
    /// The goodbye carries more than its one optional reason byte.
    case malformedGoodbye(length: Int)

    public var description: String {
        switch self {
        case .tooLarge(let length, let limit): "frame of \(length) bytes is over the limit of \(limit)"
        case .tooShort(let length): "frame length \(length) is shorter than any ciphertext"
        case .authenticationFailed: "a frame failed authentication (changed, reordered, duplicated or dropped)"
        case .afterGoodbye: "data after the end of the stream"
        case .malformedGoodbye(let length): "goodbye of \(length) bytes, expected at most 1"
        }
    }
}

/// Sizes of the framing layout documented on `FrameEncoder`.
enum FrameFormat {
    /// The u32 big-endian length in front of each ciphertext.
    static let lengthBytes = 4
    /// The secretstream header that opens each direction (24).
    static var headerBytes: Int { SecretStream.headerBytes }
    /// Bytes a ciphertext adds to its plaintext (17: encrypted tag byte and 16-byte MAC).
    static var overheadBytes: Int { SecretStream.overheadBytes }

    /// The 4 length bytes for a ciphertext of `length` bytes.
    static func lengthField(_ length: Int) -> [UInt8] {
        let value = UInt32(length)
        return [
            UInt8(truncatingIfNeeded: value >> 24), UInt8(truncatingIfNeeded: value >> 16),
            UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value),
        ]
    }
}
