import Identity
import Sodium
import Wire

/// The id of a partition: 32 bytes, derived from its `PartitionDescriptor` (self-certifying).
public struct PartitionID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let raw: Bytes32
    public init(_ raw: Bytes32) { self.raw = raw }
    public init?(bytes: some Collection<UInt8>) {
        guard let raw = Bytes32(bytes) else { return nil }
        self.raw = raw
    }
    public init?(text: String) {
        guard text.utf8.count == 52, let bytes = Base32.decode(text), let raw = Bytes32(bytes) else { return nil }
        self.raw = raw
    }
    public var bytes: [UInt8] { raw.bytes }
    public var text: String { Base32.encode(raw.bytes) }
    public var description: String { text }
    public static func < (a: PartitionID, b: PartitionID) -> Bool { a.raw < b.raw }
}

/// The id of an operation: BLAKE2b-256 of its signed header bytes 0..<152 (DESIGN §3.3).
/// A message's id is the id of the op that posted it; a task's id that of the op that created it.
public struct OpID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let raw: Bytes32
    public static let zero = OpID(.zero)
    public init(_ raw: Bytes32) { self.raw = raw }
    public init?(bytes: some Collection<UInt8>) {
        guard let raw = Bytes32(bytes) else { return nil }
        self.raw = raw
    }
    /// Parses the base32 text form; nil if it is not one.
    public init?(text: String) {
        guard text.utf8.count == 52, let bytes = Base32.decode(text), let raw = Bytes32(bytes) else { return nil }
        self.raw = raw
    }
    public var bytes: [UInt8] { raw.bytes }
    public var text: String { Base32.encode(raw.bytes) }
    public var description: String { text }
    public static func < (a: OpID, b: OpID) -> Bool { a.raw < b.raw }
}

extension ByteWriter {
    mutating func user(_ id: UserID) { bytes32(id.raw) }
    mutating func opID(_ id: OpID) { bytes32(id.raw) }
    mutating func partitionID(_ id: PartitionID) { bytes32(id.raw) }
}

extension ByteReader {
    mutating func user(_ field: String) throws(DecodingError) -> UserID { UserID(try bytes32(field)) }
    mutating func opID(_ field: String) throws(DecodingError) -> OpID { OpID(try bytes32(field)) }
    mutating func partitionID(_ field: String) throws(DecodingError) -> PartitionID { PartitionID(try bytes32(field)) }
}
