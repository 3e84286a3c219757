import Identity
import Replica
import Sodium
import TestSupport
import Testing
import Wire

/// An op's id and body hash are BLAKE2b-256 of its signed header bytes and of its body (DESIGN
/// §3.2), however the code computes them.
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
}
