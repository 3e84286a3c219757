import Identity
import Sodium
import Wire

/// The id of a partition: 32 bytes, derived from its `PartitionDescriptor` (self-certifying).
public struct PartitionID: Bytes32Identifier {
    public let raw: Bytes32
    public init(_ raw: Bytes32) { self.raw = raw }
}

/// The id of an operation: BLAKE2b-256 of its signed header bytes 0..<152 (docs/DESIGN.md §3.3).
/// A message's id is the id of the op that posted it; a task's id that of the op that created it.
public struct OpID: Bytes32Identifier {
    public static let zero = OpID(.zero)
    public let raw: Bytes32
    public init(_ raw: Bytes32) { self.raw = raw }
}

extension ByteWriter {
    mutating func user(_ id: UserID) { bytes32(id.raw) }
    mutating func opID(_ id: OpID) { bytes32(id.raw) }
    mutating func partitionID(_ id: PartitionID) { bytes32(id.raw) }
}

extension ByteReader {
    mutating func user(_ field: String) throws(WireDecodingError) -> UserID { UserID(try bytes32(field)) }
    mutating func opID(_ field: String) throws(WireDecodingError) -> OpID { OpID(try bytes32(field)) }
    mutating func partitionID(_ field: String) throws(WireDecodingError) -> PartitionID { PartitionID(try bytes32(field)) }
}
