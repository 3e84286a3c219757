/// Why bytes could not be decoded. Decoders never trap on hostile input; they throw one of these.
public enum WireDecodingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The input ended before a field was complete.
    case truncated(field: String)
    /// Bytes were left over after the last field.
    case trailingBytes(count: Int)
    /// A length or count exceeds the format's limit (checked before allocating).
    case tooLong(field: String, length: Int, limit: Int)
    /// A field holds a value the format does not allow.
    case invalidValue(field: String)
    /// Text that is not valid UTF-8.
    case invalidUTF8(field: String)

    public var description: String {
        switch self {
        case .truncated(let field): "input ends inside \(field)"
        case .trailingBytes(let count): "\(count) unexpected bytes after the end"
        case .tooLong(let field, let length, let limit): "\(field) is \(length) bytes, over the limit of \(limit)"
        case .invalidValue(let field): "invalid value in \(field)"
        case .invalidUTF8(let field): "\(field) is not valid UTF-8"
        }
    }
}

/// Reads big-endian integers and length-prefixed fields, refusing truncated or oversized input.
public struct ByteReader {
    public let bytes: ArraySlice<UInt8>
    public private(set) var offset: Int

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes[...]
        offset = 0
    }

    public init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        offset = bytes.startIndex
    }

    /// Bytes not yet read.
    public var remaining: Int { bytes.endIndex - offset }
    public var isAtEnd: Bool { remaining == 0 }

    private mutating func take(_ count: Int, _ field: String) throws(WireDecodingError) -> ArraySlice<UInt8> {
        guard count >= 0, remaining >= count else { throw .truncated(field: field) }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    public mutating func u8(_ field: String = "u8") throws(WireDecodingError) -> UInt8 {
        try take(1, field).first!
    }

    public mutating func u16(_ field: String = "u16") throws(WireDecodingError) -> UInt16 {
        let s = try take(2, field)
        return UInt16(s[s.startIndex]) << 8 | UInt16(s[s.startIndex + 1])
    }

    public mutating func u32(_ field: String = "u32") throws(WireDecodingError) -> UInt32 {
        var value: UInt32 = 0
        for b in try take(4, field) { value = value << 8 | UInt32(b) }
        return value
    }

    public mutating func u64(_ field: String = "u64") throws(WireDecodingError) -> UInt64 {
        var value: UInt64 = 0
        for b in try take(8, field) { value = value << 8 | UInt64(b) }
        return value
    }

    /// An unsigned LEB128 integer (`ByteWriter.varint`), in its shortest form: a value over 64
    /// bits, or a last byte of 0 after the first (another encoding of a shorter value), is
    /// invalid, so each value has exactly one encoding.
    public mutating func varint(_ field: String = "varint") throws(WireDecodingError) -> UInt64 {
        var value: UInt64 = 0
        for index in 0..<10 {
            let byte = try take(1, field).first!
            let bits = UInt64(byte & 0x7F)
            guard index < 9 || bits <= 1 else { throw .invalidValue(field: field) }
            value |= bits << (7 * UInt64(index))
            guard byte & 0x80 != 0 else {
                guard index == 0 || byte != 0 else { throw .invalidValue(field: field) }
                return value
            }
        }
        throw .invalidValue(field: field)
    }

    /// Exactly `count` raw bytes.
    public mutating func raw(_ count: Int, _ field: String) throws(WireDecodingError) -> [UInt8] {
        Array(try take(count, field))
    }

    /// A u16-length-prefixed field of at most `limit` bytes.
    public mutating func blob16(_ field: String, limit: Int = Int(UInt16.max)) throws(WireDecodingError) -> [UInt8] {
        let length = Int(try u16(field))
        guard length <= limit else { throw .tooLong(field: field, length: length, limit: limit) }
        return try raw(length, field)
    }

    /// A u32-length-prefixed field of at most `limit` bytes (checked before reading).
    public mutating func blob32(_ field: String, limit: Int) throws(WireDecodingError) -> [UInt8] {
        let length = Int(try u32(field))
        guard length <= limit else { throw .tooLong(field: field, length: length, limit: limit) }
        return try raw(length, field)
    }

    /// u16-length-prefixed UTF-8 text of at most `limit` bytes.
    public mutating func string16(_ field: String, limit: Int = Int(UInt16.max)) throws(WireDecodingError) -> String {
        let raw = try blob16(field, limit: limit)
        guard let text = String(validating: raw, as: UTF8.self) else { throw .invalidUTF8(field: field) }
        return text
    }

    /// An optional field written by `ByteWriter.optional`.
    public mutating func optional<T>(_ field: String, _ read: (inout ByteReader) throws(WireDecodingError) -> T) throws(WireDecodingError) -> T? {
        switch try u8(field) {
        case 0: return nil
        case 1: return try read(&self)
        default: throw .invalidValue(field: field)
        }
    }

    /// Throws unless every byte was read (formats have no slack).
    public func expectEnd() throws(WireDecodingError) {
        guard remaining == 0 else { throw .trailingBytes(count: remaining) }
    }
}
