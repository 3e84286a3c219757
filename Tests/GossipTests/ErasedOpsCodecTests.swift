import Gossip
import Identity
import Replica
import TestSupport
import Testing
import Wire

/// OPS carries an erased op with its erasure proof (bit 31 of the entry's length); NEW_OP never
/// does; an erased entry without a whole proof is malformed.
@Suite struct ErasedOpsCodecTests {
    let alice = Fixtures.identity(0)

    func chain() throws -> (post: Operation, erased: Operation, delete: Operation) {
        var factory = OpFactory()
        let post = factory.make(post("the words"), in: lobby.id, by: alice)
        let delete = factory.make(.delete(target: post.id, targetSeq: post.seq), in: lobby.id, by: alice)
        return (post, try Operation(erasedHeader: post.header, proof: delete), delete)
    }

    @Test func anOpsBatchWithAnErasedOp_roundTrips_andCarriesNoBody() throws {
        let (_, erased, delete) = try chain()
        let batch = OpBatch(partition: lobby.id, author: alice.id, ops: [erased, delete], isLast: true)
        let bytes = SyncMessage.ops(batch).encode()
        #expect(bytes.count == batch.encodedSize)
        #expect(try SyncMessage.decode(bytes) == .ops(batch))
        // The first entry's length: bit 31 set, then the header and the whole proof.
        let prefix = 1 + 32 + 32 + 1 + 2
        let length = Array(bytes[prefix..<(prefix + 4)])
        #expect(length == withUnsafeBytes(of: (UInt32(1 << 31) | UInt32(2 * Operation.headerBytes + delete.body.count)).bigEndian, Array.init))
        #expect(bytes.firstRange(of: Array("the words".utf8)) == nil)
    }

    @Test func anErasedEntryWithoutAWholeProof_isMalformed() throws {
        let (post, _, delete) = try chain()
        func entry(_ payload: [UInt8]) -> [UInt8] {
            var w = ByteWriter()
            w.u8(SyncMessageType.ops.rawValue)
            w.bytes32(lobby.id.raw)
            w.bytes32(alice.id.raw)
            w.u8(1)
            w.u16(1)
            w.u32(UInt32(payload.count) | 1 << 31)
            w.raw(payload)
            return w.bytes
        }
        #expect(throws: SyncDecodingError.invalidValue(field: "op length")) { try SyncMessage.decode(entry(post.header)) }
        #expect(throws: SyncDecodingError.self) { try SyncMessage.decode(entry(post.header + delete.header)) }
        #expect(throws: SyncDecodingError.self) { try SyncMessage.decode(entry(post.header + delete.header + delete.body + [0])) }
        #expect(throws: Never.self) { try SyncMessage.decode(entry(post.header + delete.header + delete.body)) }
    }
}

/// OPS carries an expired op (outside its room's retention) as its header alone, flagged by bit
/// 30 of the entry's length; NEW_OP never does.
@Suite struct ExpiredOpsCodecTests {
    @Test func anOpsBatchWithAnExpiredOp_roundTrips_andCarriesNoBody() throws {
        var factory = OpFactory()
        let alice = Fixtures.identity(0)
        let old = factory.make(post("expired words"), in: lobby.id, by: alice)
        let next = factory.make(post("kept"), in: lobby.id, by: alice)
        let expired = try Operation(expiredHeader: old.header)
        let batch = OpBatch(partition: lobby.id, author: alice.id, ops: [expired, next], isLast: true)
        let bytes = SyncMessage.ops(batch).encode()
        #expect(bytes.count == batch.encodedSize)
        #expect(try SyncMessage.decode(bytes) == .ops(batch))
        let prefix = 1 + 32 + 32 + 1 + 2
        #expect(Array(bytes[prefix..<(prefix + 4)]) == withUnsafeBytes(of: (UInt32(1 << 30) | UInt32(Operation.headerBytes)).bigEndian, Array.init))
        #expect(bytes.firstRange(of: Array("expired words".utf8)) == nil)
        // An expired entry longer than a header is malformed.
        var long = bytes
        long[prefix + 3] &+= 1
        #expect(throws: SyncDecodingError.self) { try SyncMessage.decode(Array(long[..<(prefix + 4)]) + old.header + old.body.prefix(1)) }
    }
}
