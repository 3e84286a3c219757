import Identity
import Replica
import Wire

extension SyncMessage {
    /// Decodes one received message (one link frame).
    ///
    /// Checks run cheapest first: size of the whole message, type byte, then each field in
    /// order, with every count and length compared to its limit before anything is allocated
    /// for it. Ops are parsed (layout, version, body length) but not verified: signatures,
    /// chains and rules are the store's business. Fork proofs are verified here (two signatures),
    /// since a proof is only a proof when both signatures hold.
    public static func decode(_ bytes: [UInt8]) throws(SyncDecodingError) -> SyncMessage {
        guard bytes.count <= maxBytes else { throw .tooLarge(length: bytes.count, limit: maxBytes) }
        guard let first = bytes.first else { throw .empty }
        guard let type = SyncMessageType(rawValue: first) else { throw .unknownType(first) }
        guard !type.isReserved else { throw .reservedType(type) }
        var reader = ByteReader(bytes[1...])
        let message: SyncMessage
        do {
            message = try decodeFields(type, &reader)
            try reader.expectEnd()
        } catch let error as SyncDecodingError {
            throw error
        } catch let error as WireDecodingError {
            throw SyncDecodingError(error)
        } catch {
            preconditionFailure("unexpected error \(error)")
        }
        return message
    }

    private static func decodeFields(_ type: SyncMessageType, _ reader: inout ByteReader) throws -> SyncMessage {
        switch type {
        case .summary:
            let more = try reader.u8("summary flags") & 1 != 0
            let count = try boundedCount(&reader, "summary entries", limit: maxSummaryEntries)
            var entries: [SummaryEntry] = []
            entries.reserveCapacity(count)
            for _ in 0..<count { entries.append(try summaryEntry(&reader)) }
            return .summary(more: more, entries: entries)
        case .vector:
            let partition = try reader.partition("vector partition")
            let more = try reader.u8("vector flags") & 1 != 0
            let count = try boundedCount(&reader, "vector heads", limit: maxVectorHeads)
            var heads: [Head] = []
            heads.reserveCapacity(count)
            for _ in 0..<count { heads.append(try head(&reader)) }
            return .vector(partition: partition, more: more, heads: heads)
        case .want:
            let partition = try reader.partition("want partition")
            let author = UserID(try reader.bytes32("want author"))
            let from = try reader.u64("want from seq")
            guard from >= 1 else { throw SyncDecodingError.invalidValue(field: "want from seq") }
            let maxCount = try reader.u16("want max count")
            guard maxCount >= 1 else { throw SyncDecodingError.invalidValue(field: "want max count") }
            guard maxCount <= maxWantCount else {
                throw SyncDecodingError.overLimit(field: "want max count", value: Int(maxCount), limit: maxWantCount)
            }
            return .want(partition: partition, author: author, fromSeq: from, maxCount: maxCount)
        case .ops:
            return .ops(try opBatch(&reader))
        case .newOp:
            return .newOp(try nakedOp(&reader))
        case .fork:
            let encoded = try reader.raw(2 * Operation.headerBytes, "fork proof")
            do {
                return .fork(try ForkProof(encoded: encoded))
            } catch {
                throw SyncDecodingError.invalidForkProof(error)
            }
        case .skip:
            return .skip(try chains(&reader, "skip chains"))
        case .resume:
            return .resume(try chains(&reader, "resume chains"))
        case .prune:
            return .prune(try partitions(&reader, "prune partitions"))
        case .graft:
            return .graft(try partitions(&reader, "graft partitions"))
        case .announce:
            let partition = try reader.partition("announce partition")
            let count = try boundedCount(&reader, "announce heads", limit: maxAnnouncedHeads)
            guard count >= 1 else { throw SyncDecodingError.invalidValue(field: "announce heads") }
            var heads: [AnnouncedHead] = []
            heads.reserveCapacity(count)
            for _ in 0..<count {
                let author = UserID(try reader.bytes32("announced author"))
                let seq = try reader.u64("announced seq")
                guard seq >= 1 else { throw SyncDecodingError.invalidValue(field: "announced seq") }
                heads.append(AnnouncedHead(author: author, seq: seq))
            }
            return .announce(partition: partition, heads: heads)
        case .compactVector:
            let partition = try reader.name("vector partition")
            let more = try reader.u8("vector flags") & 1 != 0
            let count = try varintCount(&reader, "vector heads", limit: maxVectorHeads)
            var heads: [CompactHead] = []
            heads.reserveCapacity(count)
            for _ in 0..<count { heads.append(try compactHead(&reader)) }
            return .compactVector(partition: partition, more: more, heads: heads)
        case .compactAnnounce:
            let partition = try reader.name("announce partition")
            let count = try varintCount(&reader, "announce heads", limit: maxAnnouncedHeads)
            guard count >= 1 else { throw SyncDecodingError.invalidValue(field: "announce heads") }
            var heads: [CompactAnnouncedHead] = []
            heads.reserveCapacity(count)
            for _ in 0..<count {
                let author = try reader.name("announced author")
                let seq = try reader.varint("announced seq")
                guard seq >= 1 else { throw SyncDecodingError.invalidValue(field: "announced seq") }
                heads.append(CompactAnnouncedHead(author: author, seq: seq))
            }
            return .compactAnnounce(partition: partition, heads: heads)
        case .compactSkip:
            return .compactSkip(try compactChains(&reader, "skip chains"))
        case .compactResume:
            return .compactResume(try compactChains(&reader, "resume chains"))
        case .presence, .typing, .blobWant, .blob, .rooms:
            throw SyncDecodingError.reservedType(type)
        }
    }

    private static func boundedCount(_ reader: inout ByteReader, _ field: String, limit: Int) throws -> Int {
        let count = Int(try reader.u16(field))
        guard count <= limit else { throw SyncDecodingError.overLimit(field: field, value: count, limit: limit) }
        return count
    }

    private static func varintCount(_ reader: inout ByteReader, _ field: String, limit: Int) throws -> Int {
        let count = try reader.varint(field)
        guard count <= UInt64(limit) else { throw SyncDecodingError.overLimit(field: field, value: Int(clamping: count), limit: limit) }
        return Int(count)
    }

    /// The chains of a SKIP or RESUME: at least one, at most `maxPushControlChains`.
    private static func chains(_ reader: inout ByteReader, _ field: String) throws -> [ChainKey] {
        let count = try boundedCount(&reader, field, limit: maxPushControlChains)
        guard count >= 1 else { throw SyncDecodingError.invalidValue(field: field) }
        var chains: [ChainKey] = []
        chains.reserveCapacity(count)
        for _ in 0..<count {
            let partition = try reader.partition("chain partition")
            chains.append(ChainKey(partition: partition, author: UserID(try reader.bytes32("chain author"))))
        }
        return chains
    }

    /// The chains of a COMPACT_SKIP or COMPACT_RESUME: at least one, at most `maxPushControlChains`.
    private static func compactChains(_ reader: inout ByteReader, _ field: String) throws -> [CompactChain] {
        let count = try varintCount(&reader, field, limit: maxPushControlChains)
        guard count >= 1 else { throw SyncDecodingError.invalidValue(field: field) }
        var chains: [CompactChain] = []
        chains.reserveCapacity(count)
        for _ in 0..<count {
            let partition = try reader.name("chain partition")
            chains.append(CompactChain(partition: partition, author: try reader.name("chain author")))
        }
        return chains
    }

    /// The partitions of a PRUNE or GRAFT: at least one, at most `maxTreePartitions`.
    private static func partitions(_ reader: inout ByteReader, _ field: String) throws -> [PartitionID] {
        let count = try boundedCount(&reader, field, limit: maxTreePartitions)
        guard count >= 1 else { throw SyncDecodingError.invalidValue(field: field) }
        var partitions: [PartitionID] = []
        partitions.reserveCapacity(count)
        for _ in 0..<count { partitions.append(try reader.partition("tree partition")) }
        return partitions
    }

    private static func summaryEntry(_ reader: inout ByteReader) throws -> SummaryEntry {
        let partition = try reader.partition("summary partition")
        let digest = try reader.bytes32("summary digest")
        let length = Int(try reader.u8("descriptor length"))
        guard length <= maxDescriptorBytes else {
            throw SyncDecodingError.overLimit(field: "descriptor length", value: length, limit: maxDescriptorBytes)
        }
        guard length > 0 else { return SummaryEntry(partition: partition, digest: digest, descriptor: nil) }
        let bytes = try reader.raw(length, "descriptor")
        let descriptor: PartitionDescriptor
        do {
            descriptor = try PartitionDescriptor(decoding: bytes)
        } catch {
            throw SyncDecodingError.invalidDescriptor(error.description)
        }
        guard descriptor.id == partition else { throw SyncDecodingError.invalidDescriptor("it does not hash to the partition id") }
        return SummaryEntry(partition: partition, digest: digest, descriptor: descriptor)
    }

    private static func head(_ reader: inout ByteReader) throws -> Head {
        let author = UserID(try reader.bytes32("head author"))
        let maxSeq = try reader.u64("head max seq")
        let headID = OpID(try reader.bytes32("head id"))
        let frozenAt = try reader.u64("head frozen at")
        guard (maxSeq == 0) == headID.raw.isZero else { throw SyncDecodingError.invalidValue(field: "head id") }
        guard frozenAt == 0 || frozenAt > maxSeq else { throw SyncDecodingError.invalidValue(field: "head frozen at") }
        return Head(author: author, maxSeq: maxSeq, headID: headID, frozenAt: frozenAt == 0 ? nil : frozenAt)
    }

    private static func compactHead(_ reader: inout ByteReader) throws -> CompactHead {
        let author = try reader.name("head author")
        let maxSeq = try reader.varint("head max seq")
        var headID = OpID(Bytes32.zero)
        if maxSeq > 0 {
            let high = try reader.u64("head id")
            let low = try reader.u64("head id")
            headID = OpID(Bytes32(w0: high, w1: low, w2: 0, w3: 0))
        }
        let frozenAt = try reader.varint("head frozen at")
        guard frozenAt == 0 || frozenAt > maxSeq else { throw SyncDecodingError.invalidValue(field: "head frozen at") }
        return CompactHead(author: author, maxSeq: maxSeq, headID: headID, frozenAt: frozenAt == 0 ? nil : frozenAt)
    }

    private static func opBatch(_ reader: inout ByteReader) throws -> OpBatch {
        let partition = try reader.partition("ops partition")
        let author = UserID(try reader.bytes32("ops author"))
        let isLast = try reader.u8("ops flags") & 1 != 0
        let count = try boundedCount(&reader, "ops count", limit: maxOpsPerBatch)
        var ops: [Operation] = []
        ops.reserveCapacity(count)
        for _ in 0..<count {
            let field = try reader.u32("op length")
            let erased = field & erasedOpBit != 0
            let expired = field & expiredOpBit != 0
            guard !(erased && expired) else { throw SyncDecodingError.invalidValue(field: "op length flags") }
            let length = Int(field & ~(erasedOpBit | expiredOpBit))
            let (minimum, maximum) =
                erased
                ? (2 * Operation.headerBytes, Operation.maxErasedCarriedBytes)
                : expired ? (Operation.headerBytes, Operation.headerBytes) : (minOpBytes, maxOpBytes)
            guard length <= maximum else { throw SyncDecodingError.overLimit(field: "op length", value: length, limit: maximum) }
            guard length >= minimum else { throw SyncDecodingError.invalidValue(field: "op length") }
            let bytes = try reader.raw(length, "op")
            let op: Operation
            do {
                op =
                    erased
                    ? try Operation(erasedEncoding: bytes) : expired ? try Operation(expiredHeader: bytes) : try Operation(encoded: bytes)
            } catch {
                throw SyncDecodingError.invalidOperation(error)
            }
            guard op.partition == partition, op.author == author else { throw SyncDecodingError.invalidValue(field: "op chain") }
            ops.append(op)
        }
        return OpBatch(partition: partition, author: author, ops: ops, isLast: isLast)
    }

    /// An op that fills the rest of the message: the header says how long its body is.
    private static func nakedOp(_ reader: inout ByteReader) throws -> Operation {
        let header = try reader.raw(Operation.headerBytes, "op header")
        let flags = Operation.Flags(rawValue: UInt16(header[2]) << 8 | UInt16(header[3]))
        let declared = Int(header[4]) << 24 | Int(header[5]) << 16 | Int(header[6]) << 8 | Int(header[7])
        guard declared <= Operation.maxBodyBytes else { throw SyncDecodingError.invalidOperation(.bodyTooLarge(declared)) }
        let body = try reader.raw(flags.contains(.bodyErased) ? 0 : declared, "op body")
        do {
            return try Operation(header: header, body: body)
        } catch {
            throw SyncDecodingError.invalidOperation(error)
        }
    }
}

extension ByteReader {
    fileprivate mutating func partition(_ field: String) throws(WireDecodingError) -> PartitionID {
        PartitionID(try bytes32(field))
    }

    /// A `LinkName`; a number past `maxLinkNames` is invalid (whether the sender gave it is the
    /// session's to check).
    fileprivate mutating func name(_ field: String) throws(WireDecodingError) -> LinkName {
        let number = try varint(field)
        guard number > 0 else { return .full(try bytes32(field)) }
        guard number <= UInt64(SyncMessage.maxLinkNames) else { throw .invalidValue(field: field) }
        return .number(UInt32(number))
    }
}
