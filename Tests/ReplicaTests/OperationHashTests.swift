import Identity
import Replica
import Sodium
import TestSupport
import Testing
import Wire

/// An op's id and body hash are BLAKE2b-256 of its signed header bytes and of its body (docs/DESIGN.md
/// §3.3), however the code computes them.
@Suite struct OperationHashTests {
    @Test func idAndBodyHash_areBlake2bOfTheSignedHeaderAndOfTheBody() throws {
        var factory = OpFactory()
        let op = factory.make(post("hashed"), in: PartitionDescriptor.room(RoomName("lobby")!).id, by: Fixtures.identity(1))
        #expect(op.id.bytes == GenericHash.hash(Array(op.header[0..<Operation.signedBytes])))
        #expect(op.bodyHash.bytes == GenericHash.hash(op.body))
        #expect(op.hasValidBodyHash)
        // Parsed again from its bytes, it has the same id; with another body, not a valid hash.
        #expect(try Operation(header: op.header, body: op.body).id == op.id)
        var body = op.body
        body[body.count - 1] ^= 0x01
        #expect(!(try Operation(header: op.header, body: body).hasValidBodyHash))
    }

    /// A stored header's fields read without parsing it (`Operation.id(ofHeader:)` and the
    /// others) are the parsed op's.
    @Test func fieldsReadFromAStoredHeader_areTheParsedOps() throws {
        var factory = OpFactory()
        let op = factory.make(post("stored"), in: PartitionDescriptor.room(RoomName("lobby")!).id, by: Fixtures.identity(2))
        #expect(Operation.id(ofHeader: op.header) == op.id)
        #expect(Operation.author(ofHeader: op.header) == op.author)
        #expect(Operation.withSignature(ofHeader: op.header) { Array($0) } == op.signature)
    }

    /// The id leaves the signature out, so a chain's ids are known before any op is signed, and
    /// its ops may be signed in any order (batched authoring signs on several threads).
    @Test func unsignedOps_carryTheIdTheSignedOpGets_andSignInAnyOrder() throws {
        let alice = Fixtures.identity(1)
        let lobby = PartitionDescriptor.room(RoomName("lobby")!).id
        var prev = OpID.zero
        let chain = (1...4).map { seq in
            let unsigned = Operation.Unsigned(
                type: .post, partition: lobby, seq: UInt64(seq), prev: prev, hlc: HLC(raw: UInt64(seq) << 16),
                body: Array("post \(seq)".utf8), author: alice.id)
            prev = unsigned.id
            return unsigned
        }
        let signed = chain.reversed().map { $0.signed(by: alice) }.reversed()
        #expect(signed.map(\.id) == chain.map(\.id))
        #expect(signed.allSatisfy { $0.hasValidSignature && $0.hasValidBodyHash })
        #expect(zip(signed, signed.dropFirst()).allSatisfy { $1.prev == $0.id })
        let inline = Operation.sign(
            type: .post, partition: lobby, seq: 1, prev: .zero, hlc: HLC(raw: 1 << 16), body: Array("post 1".utf8), by: alice)
        #expect(inline.header == signed.first?.header)
    }
}
