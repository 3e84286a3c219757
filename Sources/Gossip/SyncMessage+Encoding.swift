import Identity
import Replica
import Wire

extension SyncMessage {
    /// The bytes of this message (one link frame), laid out as in the table of `SyncMessage`.
    ///
    /// The caller MUST keep within the limits (counts, descriptor sizes, `maxBytes`);
    /// `GossipSession` pages and splits its messages so they always do. Breaking a limit is a
    /// programming error and traps, so a node never sends what its peers must refuse.
    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: encodedSizeHint)
        writer.u8(type.rawValue)
        switch self {
        case .summary(let more, let entries):
            precondition(entries.count <= Self.maxSummaryEntries, "at most \(Self.maxSummaryEntries) summary entries")
            writer.u8(more ? 1 : 0)
            writer.u16(UInt16(entries.count))
            for entry in entries {
                writer.bytes32(entry.partition.raw)
                writer.bytes32(entry.digest)
                let descriptor = entry.descriptor?.encoded ?? []
                precondition(descriptor.count <= Self.maxDescriptorBytes, "descriptor over \(Self.maxDescriptorBytes) bytes")
                writer.u8(UInt8(descriptor.count))
                writer.raw(descriptor)
            }
        case .vector(let partition, let more, let heads):
            precondition(heads.count <= Self.maxVectorHeads, "at most \(Self.maxVectorHeads) heads per vector page")
            writer.bytes32(partition.raw)
            writer.u8(more ? 1 : 0)
            writer.u16(UInt16(heads.count))
            for head in heads {
                writer.bytes32(head.author.raw)
                writer.u64(head.maxSeq)
                writer.bytes32(head.headID.raw)
                writer.u64(head.frozenAt ?? 0)
            }
        case .want(let partition, let author, let fromSeq, let maxCount):
            precondition(fromSeq >= 1 && (1...UInt16(Self.maxWantCount)).contains(maxCount), "WANT out of range")
            writer.bytes32(partition.raw)
            writer.bytes32(author.raw)
            writer.u64(fromSeq)
            writer.u16(maxCount)
        case .ops(let batch):
            precondition(batch.ops.count <= Self.maxOpsPerBatch, "at most \(Self.maxOpsPerBatch) ops per batch")
            writer.bytes32(batch.partition.raw)
            writer.bytes32(batch.author.raw)
            writer.u8(batch.isLast ? 1 : 0)
            writer.u16(UInt16(batch.ops.count))
            for op in batch.ops {
                precondition(op.partition == batch.partition && op.author == batch.author, "an op outside the batch's chain")
                let bytes = op.carriedBytes
                writer.u32(UInt32(bytes.count) | (op.isErased ? Self.erasedOpBit : 0) | (op.isExpired ? Self.expiredOpBit : 0))
                writer.raw(bytes)
            }
        case .newOp(let op):
            precondition(!op.isErased && !op.isExpired, "an erased or expired op travels in OPS only")
            writer.raw(op.header)
            writer.raw(op.body)
        case .fork(let proof):
            writer.raw(proof.encoded)
        case .skip(let chains), .resume(let chains):
            precondition((1...Self.maxPushControlChains).contains(chains.count), "1...\(Self.maxPushControlChains) chains per SKIP or RESUME")
            writer.u16(UInt16(chains.count))
            for chain in chains {
                writer.bytes32(chain.partition.raw)
                writer.bytes32(chain.author.raw)
            }
        case .prune(let partitions), .graft(let partitions):
            precondition((1...Self.maxTreePartitions).contains(partitions.count), "1...\(Self.maxTreePartitions) partitions per PRUNE or GRAFT")
            writer.u16(UInt16(partitions.count))
            for partition in partitions { writer.bytes32(partition.raw) }
        case .announce(let partition, let heads):
            precondition((1...Self.maxAnnouncedHeads).contains(heads.count), "1...\(Self.maxAnnouncedHeads) heads per ANNOUNCE")
            writer.bytes32(partition.raw)
            writer.u16(UInt16(heads.count))
            for head in heads {
                precondition(head.seq >= 1, "an announced seq is at least 1")
                writer.bytes32(head.author.raw)
                writer.u64(head.seq)
            }
        case .compactVector(let partition, let more, let heads):
            precondition(heads.count <= Self.maxVectorHeads, "at most \(Self.maxVectorHeads) heads per vector page")
            writer.name(partition)
            writer.u8(more ? 1 : 0)
            writer.varint(UInt64(heads.count))
            for head in heads {
                precondition(head.frozenAt.map { $0 > head.maxSeq } ?? true, "a frozen-at seq is above the head")
                writer.name(head.author)
                writer.varint(head.maxSeq)
                if head.maxSeq > 0 {
                    writer.u64(head.headID.raw.w0)
                    writer.u64(head.headID.raw.w1)
                }
                writer.varint(head.frozenAt ?? 0)
            }
        case .compactAnnounce(let partition, let heads):
            precondition((1...Self.maxAnnouncedHeads).contains(heads.count), "1...\(Self.maxAnnouncedHeads) heads per ANNOUNCE")
            writer.name(partition)
            writer.varint(UInt64(heads.count))
            for head in heads {
                precondition(head.seq >= 1, "an announced seq is at least 1")
                writer.name(head.author)
                writer.varint(head.seq)
            }
        case .compactSkip(let chains), .compactResume(let chains):
            precondition((1...Self.maxPushControlChains).contains(chains.count), "1...\(Self.maxPushControlChains) chains per SKIP or RESUME")
            writer.varint(UInt64(chains.count))
            for chain in chains {
                writer.name(chain.partition)
                writer.name(chain.author)
            }
        }
        precondition(writer.bytes.count <= Self.maxBytes, "a \(type) message of \(writer.bytes.count) bytes is over one frame")
        return writer.bytes
    }

    private var encodedSizeHint: Int {
        switch self {
        case .summary(_, let entries): Self.summaryPrefixBytes + entries.count * (Self.summaryEntryFixedBytes + 40)
        case .vector(_, _, let heads): Self.vectorPrefixBytes + heads.count * Self.headBytes
        case .ops(let batch): batch.encodedSize
        case .newOp(let op): 1 + op.carriedByteCount
        case .fork: 1 + 2 * Operation.headerBytes
        case .want: 1 + 32 + 32 + 8 + 2
        case .skip(let chains), .resume(let chains): 1 + 2 + chains.count * Self.chainBytes
        case .prune(let partitions), .graft(let partitions): 1 + 2 + partitions.count * 32
        case .announce(_, let heads): Self.announcePrefixBytes + heads.count * Self.announcedHeadBytes
        case .compactVector(_, _, let heads): 40 + heads.count * 24
        case .compactAnnounce(_, let heads): 40 + heads.count * 8
        case .compactSkip(let chains), .compactResume(let chains): 3 + chains.count * 6
        }
    }

    /// The encoded size of a SUMMARY entry.
    static func encodedSize(of entry: SummaryEntry) -> Int {
        summaryEntryFixedBytes + (entry.descriptor?.encoded.count ?? 0)
    }
}

extension ByteWriter {
    /// A `LinkName`: `varint 0` ‖ the 32 bytes, or its number as a varint.
    fileprivate mutating func name(_ name: LinkName) {
        switch name {
        case .full(let raw):
            varint(0)
            bytes32(raw)
        case .number(let number):
            precondition((1...UInt32(SyncMessage.maxLinkNames)).contains(number), "a link name's number is 1...\(SyncMessage.maxLinkNames)")
            varint(UInt64(number))
        }
    }
}
