import Gossip
import Identity
import Replica
import TestSupport
import Testing
import Wire

/// Every sync message round-trips; truncated, oversized and garbage input gives a specific error.
@Suite struct SyncMessageCodecTests {
    let alice = Fixtures.identity(0)
    let bob = Fixtures.identity(1)
    let mallory = Fixtures.identity(3)

    /// One message of each type, the larger ones with several entries.
    func samples() throws -> [SyncMessage] {
        var factory = OpFactory()
        let ops = (0..<3).map { factory.make(post("hello \($0)"), in: lobby.id, by: alice) }
        let forkA = factory.make(post("a"), in: lobby.id, by: mallory)
        let forkB = factory.make(post("b"), in: lobby.id, by: mallory, seq: 1, prev: .zero)
        let conversation = PartitionDescriptor.conversation(creator: alice.id, nonce: Bytes32(w0: 1, w1: 2, w2: 3, w3: 4))
        return [
            .summary(
                more: true,
                entries: [
                    SummaryEntry(lobby, digest: .empty, revealDescriptor: false),
                    SummaryEntry(.directory, digest: PartitionDigest(heads: [Head(author: alice.id, maxSeq: 3, headID: ops[2].id)]), revealDescriptor: true),
                    SummaryEntry(conversation, digest: .empty, revealDescriptor: true),
                    SummaryEntry(.ownData(owner: bob.id), digest: .empty, revealDescriptor: true),
                ]),
            .summary(more: false, entries: []),
            .vector(
                partition: lobby.id, more: true,
                heads: [
                    Head(author: alice.id, maxSeq: 3, headID: ops[2].id),
                    Head(author: mallory.id, maxSeq: 0, headID: .zero, frozenAt: 1),
                ]),
            .vector(partition: lobby.id, more: false, heads: []),
            .want(partition: lobby.id, author: alice.id, fromSeq: 7, maxCount: 256),
            .ops(OpBatch(partition: lobby.id, author: alice.id, ops: ops, isLast: true)),
            .ops(OpBatch(partition: lobby.id, author: alice.id, ops: [], isLast: true)),
            .newOp(ops[0]),
            .fork(try ForkProof(forkA.header, forkB.header)),
            .skip([ChainKey(partition: lobby.id, author: alice.id)]),
            .resume([ChainKey(partition: lobby.id, author: alice.id), ChainKey(partition: conversation.id, author: bob.id)]),
            .prune([lobby.id]),
            .graft([lobby.id, conversation.id]),
            .announce(partition: lobby.id, heads: [AnnouncedHead(author: alice.id, seq: 3), AnnouncedHead(author: bob.id, seq: 1)]),
            .compactVector(
                partition: .full(lobby.id.raw), more: true,
                heads: [
                    CompactHead(author: .number(1), maxSeq: 300, headID: ops[2].id, frozenAt: nil),
                    CompactHead(author: .full(mallory.id.raw), maxSeq: 0, headID: .zero, frozenAt: 1),
                    CompactHead(author: .number(16_384), maxSeq: 1 << 40, headID: ops[1].id, frozenAt: 1 << 41),
                ]),
            .compactVector(partition: .number(2), more: false, heads: []),
            .compactAnnounce(
                partition: .number(3),
                heads: [CompactAnnouncedHead(author: .full(alice.id.raw), seq: 3), CompactAnnouncedHead(author: .number(7), seq: 1 << 40)]),
        ]
    }

    @Test func everyMessage_roundTrips() throws {
        for message in try samples() {
            let bytes = message.encode()
            #expect(bytes.first == message.type.rawValue)
            #expect(try SyncMessage.decode(bytes) == message, "\(message.type)")
        }
    }

    @Test func layout_matchesTheByteTables() {
        let want = SyncMessage.want(partition: lobby.id, author: alice.id, fromSeq: 0x0102, maxCount: 0x0100).encode()
        #expect(want.count == 75)
        #expect(want[0] == 0x04)
        #expect(Array(want[1..<33]) == lobby.id.bytes)
        #expect(Array(want[33..<65]) == alice.id.publicKey)
        #expect(Array(want[65..<73]) == [0, 0, 0, 0, 0, 0, 1, 2])
        #expect(Array(want[73..<75]) == [1, 0])
        let entry = SyncMessage.summary(more: true, entries: [SummaryEntry(.directory, digest: .empty, revealDescriptor: true)]).encode()
        #expect(Array(entry[0..<4]) == [0x02, 0x01, 0x00, 0x01])
        #expect(Array(entry[4..<36]) == PartitionDescriptor.directory.id.bytes)
        #expect(Array(entry[36..<68]) == PartitionDigest.empty.raw.bytes)
        #expect(Array(entry[68...]) == [1, PartitionKind.directory.rawValue])
        let skip = SyncMessage.skip([ChainKey(partition: lobby.id, author: alice.id)]).encode()
        #expect(skip == [0x0F, 0x00, 0x01] + lobby.id.bytes + alice.id.publicKey)
        let resume = SyncMessage.resume([ChainKey(partition: lobby.id, author: alice.id)]).encode()
        #expect(resume == [0x10, 0x00, 0x01] + lobby.id.bytes + alice.id.publicKey)
        #expect(SyncMessage.prune([lobby.id]).encode() == [0x14, 0x00, 0x01] + lobby.id.bytes)
        #expect(SyncMessage.graft([lobby.id]).encode() == [0x15, 0x00, 0x01] + lobby.id.bytes)
        let announce = SyncMessage.announce(partition: lobby.id, heads: [AnnouncedHead(author: alice.id, seq: 0x0102)]).encode()
        #expect(announce == [0x16] + lobby.id.bytes + [0x00, 0x01] + alice.id.publicKey + [0, 0, 0, 0, 0, 0, 1, 2])
    }

    @Test func compactMessages_layout_matchesTheByteTable() {
        let id = OpID(Bytes32(w0: 0x0102, w1: 0x0304, w2: 5, w3: 6))
        let vector = SyncMessage.compactVector(
            partition: .number(1), more: false, heads: [CompactHead(author: .full(alice.id.raw), maxSeq: 3, headID: id, frozenAt: nil)])
        #expect(vector.encode() == [0x17, 0x01, 0x00, 0x01, 0x00] + alice.id.publicKey + [0x03] + [0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 3, 4] + [0x00])
        let frozen = SyncMessage.compactVector(
            partition: .number(1), more: true, heads: [CompactHead(author: .number(2), maxSeq: 0, headID: .zero, frozenAt: 300)])
        #expect(frozen.encode() == [0x17, 0x01, 0x01, 0x01, 0x02, 0x00, 0xAC, 0x02])
        let announce = SyncMessage.compactAnnounce(partition: .full(lobby.id.raw), heads: [CompactAnnouncedHead(author: .number(2), seq: 300)])
        #expect(announce.encode() == [0x18, 0x00] + lobby.id.bytes + [0x01, 0x02, 0xAC, 0x02])
        let skip = SyncMessage.compactSkip([CompactChain(partition: .number(1), author: .number(300))])
        #expect(skip.encode() == [0x19, 0x01, 0x01, 0xAC, 0x02])
        #expect(SyncMessage.compactResume([CompactChain(partition: .number(1), author: .number(2))]).encode() == [0x1A, 0x01, 0x01, 0x02])
    }

    @Test func compactMessages_withImpossibleNamesCountsOrSeqs_areRefused() {
        // A number past maxLinkNames (16,385 = 0x81 0x80 0x01).
        #expect(throws: SyncDecodingError.invalidValue(field: "vector partition")) { try SyncMessage.decode([0x17, 0x81, 0x80, 0x01, 0x00, 0x00]) }
        // 1,025 heads (0x81 0x08), refused before any head is read.
        #expect(throws: SyncDecodingError.overLimit(field: "vector heads", value: 1_025, limit: 1_024)) {
            try SyncMessage.decode([0x17, 0x01, 0x00, 0x81, 0x08])
        }
        #expect(throws: SyncDecodingError.invalidValue(field: "head frozen at")) {
            try SyncMessage.decode([0x17, 0x01, 0x00, 0x01, 0x02, 0x05] + [UInt8](repeating: 7, count: 16) + [0x05])
        }
        #expect(throws: SyncDecodingError.invalidValue(field: "announce heads")) { try SyncMessage.decode([0x18, 0x01, 0x00]) }
        #expect(throws: SyncDecodingError.invalidValue(field: "announced seq")) { try SyncMessage.decode([0x18, 0x01, 0x01, 0x02, 0x00]) }
        #expect(throws: SyncDecodingError.invalidValue(field: "skip chains")) { try SyncMessage.decode([0x19, 0x00]) }
        #expect(throws: SyncDecodingError.overLimit(field: "resume chains", value: 1_025, limit: 1_024)) { try SyncMessage.decode([0x1A, 0x81, 0x08]) }
        // A count in a longer form than it needs.
        #expect(throws: SyncDecodingError.invalidValue(field: "announce heads")) { try SyncMessage.decode([0x18, 0x01, 0x81, 0x00, 0x02, 0x01]) }
    }

    @Test func treeMessages_withNothingInThem_overTheLimit_orSeqZero_areRefused() throws {
        for type: UInt8 in [0x14, 0x15] {
            let field = type == 0x14 ? "prune partitions" : "graft partitions"
            #expect(throws: SyncDecodingError.invalidValue(field: field)) { try SyncMessage.decode([type, 0x00, 0x00]) }
            #expect(throws: SyncDecodingError.overLimit(field: field, value: 1_025, limit: 1_024)) { try SyncMessage.decode([type, 0x04, 0x01]) }
            #expect(throws: SyncDecodingError.truncated(field: "tree partition")) { try SyncMessage.decode([type, 0x00, 0x02] + lobby.id.bytes) }
        }
        #expect(throws: SyncDecodingError.invalidValue(field: "announce heads")) { try SyncMessage.decode([0x16] + lobby.id.bytes + [0x00, 0x00]) }
        #expect(throws: SyncDecodingError.overLimit(field: "announce heads", value: 65_535, limit: 1_024)) {
            try SyncMessage.decode([0x16] + lobby.id.bytes + [0xFF, 0xFF])
        }
        #expect(throws: SyncDecodingError.invalidValue(field: "announced seq")) {
            try SyncMessage.decode([0x16] + lobby.id.bytes + [0x00, 0x01] + alice.id.publicKey + [0, 0, 0, 0, 0, 0, 0, 0])
        }
        let most = (0..<SyncMessage.maxAnnouncedHeads).map { AnnouncedHead(author: Fixtures.identity(UInt8($0 % 200)).id, seq: UInt64($0 + 1)) }
        let full = SyncMessage.announce(partition: lobby.id, heads: most)
        #expect(try SyncMessage.decode(full.encode()) == full)
    }

    @Test func skipAndResume_withNoChainsOrOverTheLimit_areRefused() throws {
        for type: UInt8 in [0x0F, 0x10] {
            let field = type == 0x0F ? "skip chains" : "resume chains"
            #expect(throws: SyncDecodingError.invalidValue(field: field)) { try SyncMessage.decode([type, 0x00, 0x00]) }
            // Only the count is present: refused before reading (or allocating for) any chain.
            #expect(throws: SyncDecodingError.overLimit(field: field, value: 1_025, limit: 1_024)) { try SyncMessage.decode([type, 0x04, 0x01]) }
            #expect(throws: SyncDecodingError.overLimit(field: field, value: 65_535, limit: 1_024)) { try SyncMessage.decode([type, 0xFF, 0xFF]) }
            #expect(throws: SyncDecodingError.truncated(field: "chain author")) {
                try SyncMessage.decode([type, 0x00, 0x02] + lobby.id.bytes + alice.id.publicKey + lobby.id.bytes)
            }
        }
        let most = (0..<SyncMessage.maxPushControlChains).map { ChainKey(partition: lobby.id, author: Fixtures.identity(UInt8($0 % 200)).id) }
        #expect(try SyncMessage.decode(SyncMessage.skip(most).encode()) == .skip(most))
    }

    @Test func everyMessage_truncatedAtEveryLength_isTruncated() throws {
        for message in try samples() {
            let bytes = message.encode()
            #expect(throws: SyncDecodingError.empty) { try SyncMessage.decode([]) }
            for length in 1..<bytes.count {
                do {
                    let decoded = try SyncMessage.decode(Array(bytes[0..<length]))
                    Issue.record("\(message.type) cut to \(length) of \(bytes.count) bytes decoded as \(decoded.type)")
                } catch {
                    guard case .truncated = error else {
                        Issue.record("\(message.type) cut to \(length) bytes: \(error)")
                        continue
                    }
                }
            }
        }
    }

    @Test func everyMessage_withAnExtraByte_hasTrailingBytes() throws {
        for message in try samples() {
            #expect(throws: SyncDecodingError.trailingBytes(count: 1), "\(message.type)") { try SyncMessage.decode(message.encode() + [0]) }
        }
    }

    @Test func types_unknownAndReserved_areNamed() {
        // 0x01, 0x09, 0x0A, 0x0B and 0x11 are the link layer's (HELLO, PING, PONG, BYE, ADDRESSES).
        for type: UInt8 in [0x00, 0x01, 0x09, 0x0A, 0x0B, 0x11, 0x7F, 0xFF] {
            #expect(throws: SyncDecodingError.unknownType(type)) { try SyncMessage.decode([type, 0, 0]) }
        }
        for type in SyncMessageType.allCases where type.isReserved {
            #expect(throws: SyncDecodingError.reservedType(type)) { try SyncMessage.decode([type.rawValue, 1, 2, 3]) }
        }
        #expect(SyncMessageType.allCases.filter(\.isReserved) == [.presence, .typing, .blobWant, .blob, .rooms])
    }

    // MARK: - Limits, checked before allocating

    @Test func wholeMessage_overOneFrame_isTooLarge() {
        let bytes = [UInt8](repeating: 0x06, count: SyncMessage.maxBytes + 1)
        #expect(throws: SyncDecodingError.tooLarge(length: SyncMessage.maxBytes + 1, limit: SyncMessage.maxBytes)) { try SyncMessage.decode(bytes) }
    }

    @Test func counts_overTheirLimits_areRefusedBeforeReadingEntries() {
        // Only the count is present: a decoder that allocated or read first would report truncation.
        #expect(throws: SyncDecodingError.overLimit(field: "summary entries", value: 4_097, limit: 4_096)) {
            try SyncMessage.decode([0x02, 0x00, 0x10, 0x01])
        }
        #expect(throws: SyncDecodingError.overLimit(field: "summary entries", value: 65_535, limit: 4_096)) {
            try SyncMessage.decode([0x02, 0x00, 0xFF, 0xFF])
        }
        #expect(throws: SyncDecodingError.overLimit(field: "vector heads", value: 1_025, limit: 1_024)) {
            try SyncMessage.decode([0x03] + lobby.id.bytes + [0x00, 0x04, 0x01])
        }
        #expect(throws: SyncDecodingError.overLimit(field: "ops count", value: 257, limit: 256)) {
            try SyncMessage.decode([0x05] + lobby.id.bytes + alice.id.publicKey + [0x01, 0x01, 0x01])
        }
    }

    @Test func lengths_overTheirLimits_areRefusedBeforeReading() {
        let opsPrefix: [UInt8] = [0x05] + lobby.id.bytes + alice.id.publicKey + [0x01, 0x00, 0x01]
        // Bit 31 marks an erased op with its proof, which has a limit of its own; bit 30 an
        // expired op, its header alone; never both.
        #expect(throws: SyncDecodingError.overLimit(field: "op length", value: Int(UInt32.max >> 2), limit: Operation.maxErasedCarriedBytes)) {
            try SyncMessage.decode(opsPrefix + [0xBF, 0xFF, 0xFF, 0xFF])
        }
        #expect(throws: SyncDecodingError.overLimit(field: "op length", value: Int(UInt32.max >> 2), limit: Operation.headerBytes)) {
            try SyncMessage.decode(opsPrefix + [0x7F, 0xFF, 0xFF, 0xFF])
        }
        #expect(throws: SyncDecodingError.invalidValue(field: "op length flags")) {
            try SyncMessage.decode(opsPrefix + [0xFF, 0xFF, 0xFF, 0xFF])
        }
        #expect(throws: SyncDecodingError.overLimit(field: "op length", value: Int(UInt32.max >> 2), limit: SyncMessage.maxOpBytes)) {
            try SyncMessage.decode(opsPrefix + [0x3F, 0xFF, 0xFF, 0xFF])
        }
        #expect(throws: SyncDecodingError.overLimit(field: "op length", value: SyncMessage.maxOpBytes + 1, limit: SyncMessage.maxOpBytes)) {
            try SyncMessage.decode(opsPrefix + bigEndian32(UInt32(SyncMessage.maxOpBytes + 1)))
        }
        #expect(throws: SyncDecodingError.invalidValue(field: "op length")) { try SyncMessage.decode(opsPrefix + [0, 0, 0, 10]) }
        let summaryPrefix: [UInt8] = [0x02, 0x00, 0x00, 0x01] + lobby.id.bytes + PartitionDigest.empty.raw.bytes
        #expect(throws: SyncDecodingError.overLimit(field: "descriptor length", value: 97, limit: 96)) { try SyncMessage.decode(summaryPrefix + [97]) }
        // A NEW_OP whose header declares a body over 64 KiB.
        var header = SyncMessage.newOp(opFor(alice)).encode()
        header.replaceSubrange(5..<9, with: bigEndian32(UInt32(Operation.maxBodyBytes + 1)))
        #expect(throws: SyncDecodingError.invalidOperation(.bodyTooLarge(Operation.maxBodyBytes + 1))) { try SyncMessage.decode(Array(header[0..<217])) }
    }

    @Test func want_outOfRange_isInvalid() {
        func want(from: UInt64, count: UInt16) -> [UInt8] {
            var writer = ByteWriter()
            writer.u8(0x04)
            writer.raw(lobby.id.bytes)
            writer.raw(alice.id.publicKey)
            writer.u64(from)
            writer.u16(count)
            return writer.bytes
        }
        #expect(throws: SyncDecodingError.overLimit(field: "want max count", value: 257, limit: 256)) { try SyncMessage.decode(want(from: 1, count: 257)) }
        #expect(throws: SyncDecodingError.invalidValue(field: "want max count")) { try SyncMessage.decode(want(from: 1, count: 0)) }
        #expect(throws: SyncDecodingError.invalidValue(field: "want from seq")) { try SyncMessage.decode(want(from: 0, count: 1)) }
    }

    @Test func fields_withImpossibleValues_areInvalid() throws {
        // A descriptor that does not hash to the id beside it.
        var summary = SyncMessage.summary(more: false, entries: [SummaryEntry(.directory, digest: .empty, revealDescriptor: true)]).encode()
        summary.replaceSubrange(4..<36, with: lobby.id.bytes)
        #expect(throws: SyncDecodingError.invalidDescriptor("it does not hash to the partition id")) { try SyncMessage.decode(summary) }
        // Heads: a zero id with a seq, a frozen-at seq not above the max seq.
        let badHeads = [Head(author: alice.id, maxSeq: 2, headID: .zero), Head(author: alice.id, maxSeq: 0, headID: OpID(Bytes32(w0: 1, w1: 0, w2: 0, w3: 0)))]
        for head in badHeads {
            #expect(throws: SyncDecodingError.invalidValue(field: "head id")) {
                try SyncMessage.decode(SyncMessage.vector(partition: lobby.id, more: false, heads: [head]).encode())
            }
        }
        let frozenBelow = Head(author: alice.id, maxSeq: 3, headID: opFor(alice).id, frozenAt: 3)
        #expect(throws: SyncDecodingError.invalidValue(field: "head frozen at")) {
            try SyncMessage.decode(SyncMessage.vector(partition: lobby.id, more: false, heads: [frozenBelow]).encode())
        }
        // An op of another author inside a batch.
        var batch = SyncMessage.ops(OpBatch(partition: lobby.id, author: alice.id, ops: [opFor(alice)], isLast: true)).encode()
        batch.replaceSubrange(33..<65, with: bob.id.publicKey)
        #expect(throws: SyncDecodingError.invalidValue(field: "op chain")) { try SyncMessage.decode(batch) }
        // An op envelope of an unknown version.
        var newOp = SyncMessage.newOp(opFor(alice)).encode()
        newOp[1] = 2
        #expect(throws: SyncDecodingError.invalidOperation(.unsupportedVersion(2))) { try SyncMessage.decode(newOp) }
        // A fork "proof" of one header twice.
        let op = opFor(mallory)
        #expect(throws: SyncDecodingError.invalidForkProof(.malformed("fork proof headers do not conflict"))) {
            try SyncMessage.decode([0x07] + op.header + op.header)
        }
    }

    // MARK: - Garbage

    @Test func randomBytes_neverCrashTheDecoder() throws {
        let seed = SeededRandom.announce("randomBytes_neverCrashTheDecoder")
        var random = SeededRandom(seed: seed)
        let valid = try samples().map { $0.encode() }
        var decoded = 0
        for _ in 0..<20_000 {
            var bytes: [UInt8]
            if random.chance(0.5) {
                // A valid message, damaged: bits flipped, cut, or extended.
                bytes = valid[Int.random(in: 0..<valid.count, using: &random)]
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    let index = Int.random(in: 0..<bytes.count, using: &random)
                    bytes[index] ^= UInt8(1 << Int.random(in: 0..<8, using: &random))
                }
                if random.chance(0.3) { bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &random))) }
                if random.chance(0.1) { bytes += [UInt8.random(in: 0...255, using: &random)] }
            } else {
                bytes = [UInt8.random(in: 0...0x10, using: &random)]
                bytes += (0..<Int.random(in: 0...300, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            }
            if let message = try? SyncMessage.decode(bytes) {
                decoded += 1
                #expect(try SyncMessage.decode(message.encode()) == message, "seed \(seed)")
            }
        }
        #expect(decoded < 20_000, "seed \(seed)")
    }

    // MARK: - Helpers

    func opFor(_ author: Identity) -> Operation {
        var factory = OpFactory()
        return factory.make(post("x"), in: lobby.id, by: author)
    }

    func bigEndian32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
    }
}
