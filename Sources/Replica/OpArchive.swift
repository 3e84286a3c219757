import Sodium
import Wire

/// The file format of `parley export` / `parley import`: signed ops with the descriptors of their
/// partitions, to carry between groups of nodes that never meet (a USB stick). Everything in it
/// is verified again on import, so the file needs no protection of its own beyond a checksum
/// that tells a damaged or cut-short file from a complete one.
///
/// | part | bytes | content |
/// |---|---|---|
/// | magic | 8 | `PRLYOPS3` (written); `PRLYOPS2` and `PRLYOPS1` files are still read |
/// | record | 1 + 4 + n | kind (1 descriptor, 2 op, 3 fork proof, 4 erased op, 5 blob, 6 expired op), u32 length, payload |
/// | trailer | 1 + 4 + 32 | kind 0xFF, length 32, BLAKE2b-256 of every byte before the trailer |
///
/// Records of one partition come after its descriptor; ops come in chain order per author. An
/// op is `header ‖ body`; an erased op (kind 4, `PRLYOPS2` only) is `header [216]` ‖ its
/// erasure proof as `header ‖ body` (`Operation.carriedBytes`): the importer checks the proof
/// as a peer would, so an export carries a deleted message's header but never its words. An
/// expired op (kind 6, `PRLYOPS3` only) is its header alone: the importer takes it only if its
/// room's retention puts it outside by the importer's own view. A blob (kind 5, `PRLYOPS3` only)
/// is an attachment's or avatar's bytes, after the ops of the partition whose views name it; its
/// hash is computed on import, never read from the file.
public enum OpArchive {
    public static let magic = Array("PRLYOPS3".utf8)
    /// The magic of files written before blobs (no kind 5 records).
    public static let magicVersion2 = Array("PRLYOPS2".utf8)
    /// The magic of files written before erased ops (no kind 4 or 5 records).
    public static let magicVersion1 = Array("PRLYOPS1".utf8)
    /// A record can hold at most one op (header + 64 KiB body), an erased op with its proof,
    /// or a descriptor; larger is damage.
    public static let maxRecordBytes = Operation.maxErasedCarriedBytes
    /// A blob record holds at most the largest blob: 8 MiB of content (docs/DESIGN.md §7) plus a
    /// conversation's encryption overhead.
    public static let maxBlobRecordBytes = (8 << 20) + EncryptedBody.overheadBytes

    public enum Record: Hashable, Sendable {
        case partition(PartitionDescriptor)
        case operation(Operation)
        case forkProof(ForkProof)
        /// An attachment's or avatar's content.
        case blob([UInt8])
    }

    /// Why an archive could not be read (past the records already returned).
    public enum ArchiveError: Error, Equatable, CustomStringConvertible {
        case notAnArchive
        case truncated(afterRecords: Int)
        case damaged(String)
        case checksumMismatch

        public var description: String {
            switch self {
            case .notAnArchive: "it is not a Parley export file (no PRLYOPS header)"
            case .truncated(let n): "it ends early, after \(n) records (the file was cut short)"
            case .damaged(let why): "it is damaged: \(why)"
            case .checksumMismatch: "its checksum does not match (the file was changed or damaged)"
            }
        }
    }

    /// Writes an archive through `sink` (which receives successive chunks).
    public final class Writer {
        private let sink: ([UInt8]) throws -> Void
        private let hasher = GenericHash.Hasher()
        private var finished = false

        public init(sink: @escaping ([UInt8]) throws -> Void) throws {
            self.sink = sink
            try emit(OpArchive.magic)
        }

        public func write(_ record: Record) throws {
            precondition(!finished, "archive already finished")
            let (kind, payload): (UInt8, [UInt8])
            switch record {
            case .partition(let descriptor): (kind, payload) = (1, descriptor.encoded)
            case .operation(let op): (kind, payload) = (op.isErased ? 4 : op.isExpired ? 6 : 2, op.carriedBytes)
            case .forkProof(let proof): (kind, payload) = (3, proof.encoded)
            case .blob(let data): (kind, payload) = (5, data)
            }
            var w = ByteWriter(capacity: payload.count + 5)
            w.u8(kind)
            w.u32(UInt32(payload.count))
            w.raw(payload)
            try emit(w.bytes)
        }

        /// Writes the trailer; the archive is complete only after this.
        public func finish() throws {
            finished = true
            let digest = hasher.finalize()
            var w = ByteWriter()
            w.u8(0xFF)
            w.u32(32)
            w.raw(digest)
            try sink(w.bytes)
        }

        private func emit(_ bytes: [UInt8]) throws {
            hasher.update(bytes)
            try sink(bytes)
        }
    }

    /// Reads an archive from `source`, which returns up to the requested number of bytes (fewer
    /// only at the end). Records are returned one at a time so a large file never sits in memory.
    public final class Reader {
        private let source: (Int) throws -> [UInt8]
        private let hasher = GenericHash.Hasher()
        public private(set) var recordsRead = 0
        private var done = false
        /// The file's format version (1, 2 or 3): what record kinds it may hold.
        private let version: Int

        public init(source: @escaping (Int) throws -> [UInt8]) throws {
            self.source = source
            let head = try source(OpArchive.magic.count)
            switch head {
            case OpArchive.magic: version = 3
            case OpArchive.magicVersion2: version = 2
            case OpArchive.magicVersion1: version = 1
            default: throw ArchiveError.notAnArchive
            }
            hasher.update(head)
        }

        /// The next record, or nil after a valid trailer.
        public func next() throws -> Record? {
            guard !done else { return nil }
            let header = try source(5)
            guard header.count == 5 else { throw ArchiveError.truncated(afterRecords: recordsRead) }
            var r = ByteReader(header)
            let kind = try r.u8()
            let length = Int(try r.u32())
            if kind == 0xFF {
                guard length == 32 else { throw ArchiveError.damaged("bad trailer length") }
                let expected = hasher.finalize()
                let digest = try source(32)
                guard digest.count == 32 else { throw ArchiveError.truncated(afterRecords: recordsRead) }
                guard Sodium.constantTimeEqual(digest, expected) else { throw ArchiveError.checksumMismatch }
                done = true
                return nil
            }
            guard length <= (kind == 5 ? OpArchive.maxBlobRecordBytes : OpArchive.maxRecordBytes) else {
                throw ArchiveError.damaged("a record claims \(length) bytes")
            }
            let payload = try source(length)
            guard payload.count == length else { throw ArchiveError.truncated(afterRecords: recordsRead) }
            hasher.update(header)
            hasher.update(payload)
            recordsRead += 1
            do {
                switch kind {
                case 1: return .partition(try PartitionDescriptor(decoding: payload))
                case 2:
                    guard payload.count <= Operation.headerBytes + Operation.maxBodyBytes else { throw ArchiveError.damaged("an op record of \(length) bytes") }
                    return .operation(try Operation(encoded: payload))
                case 3: return .forkProof(try ForkProof(encoded: payload))
                case 4 where version >= 2: return .operation(try Operation(erasedEncoding: payload))
                case 5 where version >= 3: return .blob(payload)
                case 6 where version >= 3: return .operation(try Operation(expiredHeader: payload))
                default: throw ArchiveError.damaged("unknown record kind \(kind)")
                }
            } catch let error as ArchiveError {
                throw error
            } catch {
                throw ArchiveError.damaged("record \(recordsRead): \(error)")
            }
        }
    }
}
