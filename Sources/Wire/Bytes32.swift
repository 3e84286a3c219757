/// Thirty-two bytes held inline (four big-endian words): keys, hashes and ids without a heap
/// allocation, hashable and ordered byte-wise (so sorting by `Bytes32` sorts by the bytes).
public struct Bytes32: Hashable, Comparable, Sendable {
    public var w0: UInt64, w1: UInt64, w2: UInt64, w3: UInt64

    public static let zero = Bytes32(w0: 0, w1: 0, w2: 0, w3: 0)

    public init(w0: UInt64, w1: UInt64, w2: UInt64, w3: UInt64) {
        (self.w0, self.w1, self.w2, self.w3) = (w0, w1, w2, w3)
    }

    /// Nil unless `bytes` holds exactly 32 bytes.
    public init?(_ bytes: some Collection<UInt8>) {
        guard bytes.count == 32 else { return nil }
        if let value = bytes.withContiguousStorageIfAvailable({ Bytes32(UnsafeRawBufferPointer($0)) }) {
            self = value
        } else {
            self = Array(bytes).withUnsafeBytes { Bytes32($0) }
        }
    }

    /// Reads 32 bytes from a buffer that holds at least that many (hot paths: op ids, keys).
    public init(_ buffer: UnsafeRawBufferPointer) {
        precondition(buffer.count >= 32)
        w0 = UInt64(bigEndian: buffer.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
        w1 = UInt64(bigEndian: buffer.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        w2 = UInt64(bigEndian: buffer.loadUnaligned(fromByteOffset: 16, as: UInt64.self))
        w3 = UInt64(bigEndian: buffer.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
    }

    /// The 32 bytes, in order.
    ///
    /// Copied from the words laid out on the stack: `Array(buffer)` is specialized where it is
    /// compiled, while `[UInt8](unsafeUninitializedCapacity:)` goes through the standard
    /// library's generic allocation, which on Linux looks up the array's type metadata in a hash
    /// table on every call (twice the time here; ids are bound into SQL on every op's path).
    public var bytes: [UInt8] {
        var words = (w0.bigEndian, w1.bigEndian, w2.bigEndian, w3.bigEndian)
        return withUnsafeBytes(of: &words) { Array($0) }
    }

    /// The base32 text of the 32 bytes, encoded from the words on the stack: no array of the
    /// bytes is made (every `author` answer carries three ids).
    public var base32: String {
        var words = (w0.bigEndian, w1.bigEndian, w2.bigEndian, w3.bigEndian)
        return withUnsafeBytes(of: &words) { Base32.encode($0) }
    }

    public var isZero: Bool { self == .zero }

    /// One word of the four: ids and keys are hashes or public keys, evenly spread in every
    /// word, and dictionaries keyed by them are on every op's path (hashing was a fifth of a
    /// session's push bookkeeping in profiles). Choosing 64 colliding bits costs 2^64 work.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(w0 ^ w3)
    }

    public static func < (a: Bytes32, b: Bytes32) -> Bool {
        (a.w0, a.w1, a.w2, a.w3) < (b.w0, b.w1, b.w2, b.w3)
    }
}

extension ByteWriter {
    public mutating func bytes32(_ value: Bytes32) {
        u64(value.w0); u64(value.w1); u64(value.w2); u64(value.w3)
    }
}

extension ByteReader {
    public mutating func bytes32(_ field: String) throws(WireDecodingError) -> Bytes32 {
        guard remaining >= 32 else { throw .truncated(field: field) }
        return Bytes32(w0: try u64(field), w1: try u64(field), w2: try u64(field), w3: try u64(field))
    }
}

/// A 32-byte id with a base32 text form: user ids, partition ids, op ids. Conformers supply the
/// storage; the text form, parsing and ordering are shared.
public protocol Bytes32Identifier: Hashable, Comparable, Sendable, CustomStringConvertible {
    var raw: Bytes32 { get }
    init(_ raw: Bytes32)
}

extension Bytes32Identifier {
    /// Nil unless `bytes` holds exactly 32 bytes.
    public init?(bytes: some Collection<UInt8>) {
        guard let raw = Bytes32(bytes) else { return nil }
        self.init(raw)
    }

    /// Parses the 52-character base32 text form (case-insensitive); nil if it is not one.
    public init?(text: String) {
        guard text.utf8.count == 52, let bytes = Base32.decode(text), let raw = Bytes32(bytes) else { return nil }
        self.init(raw)
    }

    public var bytes: [UInt8] { raw.bytes }
    /// The 52-character base32 text form.
    public var text: String { raw.base32 }
    public var description: String { text }
    public static func < (a: Self, b: Self) -> Bool { a.raw < b.raw }
}
