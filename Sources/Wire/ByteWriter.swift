/// Appends big-endian integers and length-prefixed fields to a byte buffer.
///
/// Every binary format of Parley (op envelopes, bodies, frames, beacons) is written with this
/// type and read back with `ByteReader`, so layouts are defined in one style.
public struct ByteWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public mutating func u8(_ value: UInt8) { bytes.append(value) }

    // The integers are appended whole, not byte by byte: eight appends, each checking the
    // capacity, cost a u64 about 180 instructions, on every op's header and frame.
    public mutating func u16(_ value: UInt16) { withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) } }

    public mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) } }

    public mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) } }

    /// An unsigned LEB128 integer: seven bits per byte, low bits first, the high bit set on every
    /// byte but the last. One byte below 128, two below 16,384: for seqs and counts that are
    /// usually small, in the messages sent most often.
    public mutating func varint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    /// Bytes `varint(value)` writes.
    public static func varintBytes(_ value: UInt64) -> Int {
        value == 0 ? 1 : (64 - value.leadingZeroBitCount + 6) / 7
    }

    /// Raw bytes with no length prefix (fixed-size fields).
    public mutating func raw(_ value: some Collection<UInt8>) { bytes.append(contentsOf: value) }

    /// Bytes prefixed with a u16 length. Callers check limits before writing.
    public mutating func blob16(_ value: [UInt8]) {
        precondition(value.count <= Int(UInt16.max), "field too long for a u16 length")
        u16(UInt16(value.count))
        bytes.append(contentsOf: value)
    }

    /// Bytes prefixed with a u32 length.
    public mutating func blob32(_ value: [UInt8]) {
        precondition(value.count <= Int(UInt32.max))
        u32(UInt32(value.count))
        bytes.append(contentsOf: value)
    }

    /// UTF-8 text prefixed with a u16 byte length.
    public mutating func string16(_ value: String) { blob16(Array(value.utf8)) }

    /// An optional field: a presence byte (0 or 1), then the value.
    public mutating func optional<T>(_ value: T?, _ write: (inout ByteWriter, T) -> Void) {
        if let value {
            u8(1)
            write(&self, value)
        } else {
            u8(0)
        }
    }
}
