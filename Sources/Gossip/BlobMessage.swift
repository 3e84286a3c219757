import Replica
import Wire

/// BLOB_WANT (0x0D) and BLOB (0x0E): the content of attachments and avatars, fetched by hash in
/// chunks (docs/DESIGN.md §4.3). Blobs are not ops: a node fetches the ones its views name and lacks.
///
/// Layouts, after the type byte (big-endian, no slack):
///
/// | type | name | fields |
/// |---:|---|---|
/// | 0x0D | BLOB_WANT | `partition [32]` ‖ `hash [32]` ‖ `offset u32` ‖ `chunks u8` (1…8) |
/// | 0x0E | BLOB | `partition [32]` ‖ `hash [32]` ‖ `status u8` ‖ `total u32` ‖ `offset u32` ‖ data (the rest, ≤ 256 KiB) |
///
/// - BLOB_WANT asks for at most `chunks` chunks of `chunkBytes` from `offset` on (the credit:
///   at most 1 MiB in flight per transfer). `partition` is where the asker saw the hash: the
///   server MUST serve only blobs that partition's views name, and only to a peer that may read
///   the partition (a joined room, the directory, a conversation the peer is a member of);
///   anything else is answered with status 1, never with data.
/// - BLOB with status 0 carries `data` at `offset` of a blob of `total` bytes; status 1 says
///   "not here" (total, offset 0 and no data). Chunks of one answer come in order; every chunk
///   but the blob's last holds exactly `chunkBytes`. A receiver MUST check that `total` is at
///   most `maxBlobBytes`, that `offset + data` stays within `total`, and that the whole blob
///   hashes (BLAKE2b-256) to `hash` before keeping it; a peer that breaks any of these breaks
///   the protocol.
public enum BlobMessage: Hashable, Sendable {
    case want(partition: PartitionID, hash: Bytes32, offset: UInt32, chunks: UInt8)
    case chunk(BlobChunk)

    /// Bytes of a full chunk.
    public static let chunkBytes = 128 << 10
    /// The largest chunk a receiver accepts (a later build may send larger ones).
    public static let maxChunkBytes = 256 << 10
    /// The largest credit of one BLOB_WANT.
    public static let maxChunksPerWant: UInt8 = 8
    /// The largest blob: 8 MiB of content plus room for a conversation's encryption.
    public static let maxBlobBytes = (8 << 20) + 64

    static let wantBytes = 1 + 32 + 32 + 4 + 1
    static let chunkPrefixBytes = 1 + 32 + 32 + 1 + 4 + 4

    public var type: SyncMessageType {
        switch self {
        case .want: .blobWant
        case .chunk: .blob
        }
    }

    /// The frame bytes (type first). Traps on a message out of its limits (a programming error).
    public func encode() -> [UInt8] {
        switch self {
        case .want(let partition, let hash, let offset, let chunks):
            precondition((1...Self.maxChunksPerWant).contains(chunks), "BLOB_WANT credit out of range")
            var writer = ByteWriter(capacity: Self.wantBytes)
            writer.u8(SyncMessageType.blobWant.rawValue)
            writer.bytes32(partition.raw)
            writer.bytes32(hash)
            writer.u32(offset)
            writer.u8(chunks)
            return writer.bytes
        case .chunk(let chunk):
            precondition(chunk.problem == nil, "BLOB out of range: \(chunk.problem ?? "")")
            var writer = ByteWriter(capacity: Self.chunkPrefixBytes + chunk.data.count)
            writer.u8(SyncMessageType.blob.rawValue)
            writer.bytes32(chunk.partition.raw)
            writer.bytes32(chunk.hash)
            writer.u8(chunk.isAvailable ? 0 : 1)
            writer.u32(chunk.total)
            writer.u32(chunk.offset)
            writer.raw(chunk.data)
            return writer.bytes
        }
    }

    /// Decodes a BLOB_WANT or BLOB frame (type byte first), checking every limit.
    public static func decode(_ bytes: [UInt8]) throws(SyncDecodingError) -> BlobMessage {
        guard bytes.count <= SyncMessage.maxBytes else { throw .tooLarge(length: bytes.count, limit: SyncMessage.maxBytes) }
        guard let first = bytes.first else { throw .empty }
        var reader = ByteReader(bytes[1...])
        do {
            switch first {
            case SyncMessageType.blobWant.rawValue:
                let partition = PartitionID(try reader.bytes32("blob want partition"))
                let hash = try reader.bytes32("blob want hash")
                let offset = try reader.u32("blob want offset")
                let chunks = try reader.u8("blob want chunks")
                guard (1...maxChunksPerWant).contains(chunks) else { throw SyncDecodingError.invalidValue(field: "blob want chunks") }
                try reader.expectEnd()
                return .want(partition: partition, hash: hash, offset: offset, chunks: chunks)
            case SyncMessageType.blob.rawValue:
                let partition = PartitionID(try reader.bytes32("blob partition"))
                let hash = try reader.bytes32("blob hash")
                let status = try reader.u8("blob status")
                guard status <= 1 else { throw SyncDecodingError.invalidValue(field: "blob status") }
                let total = try reader.u32("blob total")
                let offset = try reader.u32("blob offset")
                guard reader.remaining <= maxChunkBytes else {
                    throw SyncDecodingError.overLimit(field: "blob chunk", value: reader.remaining, limit: maxChunkBytes)
                }
                let data = try reader.raw(reader.remaining, "blob data")
                let chunk = BlobChunk(partition: partition, hash: hash, isAvailable: status == 0, total: total, offset: offset, data: data)
                if let problem = chunk.problem { throw SyncDecodingError.invalidValue(field: problem) }
                return .chunk(chunk)
            default:
                throw SyncDecodingError.unknownType(first)
            }
        } catch let error as SyncDecodingError {
            throw error
        } catch let error as WireDecodingError {
            throw SyncDecodingError(error)
        } catch {
            preconditionFailure("unexpected error \(error)")
        }
    }
}

/// One BLOB message: a piece of a blob, or "not here".
public struct BlobChunk: Hashable, Sendable {
    public var partition: PartitionID
    public var hash: Bytes32
    /// False: the sender will not send this blob (it lacks it, or the asker may not have it).
    public var isAvailable: Bool
    /// The blob's size in bytes.
    public var total: UInt32
    public var offset: UInt32
    public var data: [UInt8]

    public init(partition: PartitionID, hash: Bytes32, isAvailable: Bool, total: UInt32, offset: UInt32, data: [UInt8]) {
        (self.partition, self.hash, self.isAvailable) = (partition, hash, isAvailable)
        (self.total, self.offset, self.data) = (total, offset, data)
    }

    /// The answer "not here".
    public static func unavailable(_ partition: PartitionID, _ hash: Bytes32) -> BlobChunk {
        BlobChunk(partition: partition, hash: hash, isAvailable: false, total: 0, offset: 0, data: [])
    }

    /// Which limit of the format this chunk breaks, or nil.
    public var problem: String? {
        if !isAvailable { return total == 0 && offset == 0 && data.isEmpty ? nil : "blob status" }
        if Int(total) > BlobMessage.maxBlobBytes { return "blob total over \(BlobMessage.maxBlobBytes) bytes" }
        if data.count > BlobMessage.maxChunkBytes { return "blob chunk over \(BlobMessage.maxChunkBytes) bytes" }
        if UInt64(offset) + UInt64(data.count) > UInt64(total) { return "blob chunk beyond the blob's total" }
        return nil
    }
}
