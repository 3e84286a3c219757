import Identity
import Replica
import Sodium
import TestSupport
import Testing
import Wire

/// Private rooms' keys and write capability (docs/DESIGN.md §3.7). The derivation runs with
/// Argon2id's minimum cost here: the cost changes the keys, not what is checked.
@Suite struct PrivateRoomTests {
    let alice = Fixtures.identity(0)
    let mallory = Fixtures.identity(4)
    let name = RoomName("Night-Ops")!
    let passphrase = Array("correct horse battery staple".utf8)

    func keys(_ name: RoomName, _ passphrase: [UInt8]) throws -> PrivateRoomKeys {
        try PrivateRoomKeys.derive(name: name, passphrase: passphrase, cost: .minimum)
    }

    @Test func derivation_isAFunctionOfNameAndPassphrase_andHidesBoth() throws {
        let first = try keys(name, passphrase), again = try keys(RoomName("#night-ops")!, passphrase)
        #expect(first.descriptor == again.descriptor && first.contentKey == again.contentKey)
        let otherPassphrase = try keys(name, Array("correct horse battery stable".utf8))
        let otherName = try keys(RoomName("night-op")!, passphrase)
        let ids = Set([first.descriptor.id, otherPassphrase.descriptor.id, otherName.descriptor.id, PartitionDescriptor.room(name).id])
        #expect(ids.count == 4)
        #expect(first.contentKey != otherPassphrase.contentKey && first.contentKey.bytes != first.roomKey.seed.bytes)
        // The descriptor is the room key alone: no byte of the name travels in it.
        let encoded = first.descriptor.encoded
        #expect(encoded.count == 33 && encoded[0] == PartitionKind.privateRoom.rawValue)
        #expect(!encoded.containsSubsequence(Array("night-ops".utf8)))
        #expect(try PartitionDescriptor(decoding: encoded) == first.descriptor)
        #expect(first.descriptor.id.bytes == GenericHash.hash(domain: "parley/private-room/v1", [first.roomKey.publicKey]))
        #expect(PrivateRoomKeys.salt(for: name) == GenericHash.hash(domain: "parley/private-room/salt/v1", [Array("night-ops".utf8)], outputBytes: 16))
        // Stored parts give the same keys back.
        let restored = PrivateRoomKeys(name: name, seed: first.roomKey.seed.bytes, contentKey: first.contentKey.bytes)
        #expect(restored.descriptor == first.descriptor && restored.contentKey == first.contentKey)
        #expect(throws: PrivateRoomError.self) { try keys(name, Array("short".utf8)) }
        #expect(throws: PrivateRoomError.self) { try keys(name, [UInt8](repeating: 0x61, count: 1025)) }
    }

    @Test func roomSignature_admitsHolders_andRefusesForgedSignaturesAndMovedBodies() throws {
        let room = try keys(name, passphrase)
        let stranger = try keys(name, Array("a guess at the passphrase".utf8))
        let partition = room.descriptor.id
        func op(_ text: String, signedWith signer: PrivateRoomKeys, by author: Identity, seq: UInt64 = 1, type: OperationType = .post) throws -> Operation {
            let plain = OperationBody.post(text: text, attachments: [], location: nil, replyTo: nil).encoded
            let sealed = try EncryptedBody.seal(plain, with: room.epochKey, type: type, author: author.id)
            let hlc = HLC(raw: Fixtures.now() << 16)
            let body = RoomSignature.body(sealed: sealed, keys: signer, author: author.id, seq: seq, prev: .zero, hlc: hlc, type: type, flags: .bodyEncrypted)
            return Operation.sign(type: type, flags: .bodyEncrypted, partition: partition, seq: seq, prev: .zero, hlc: hlc, body: body, by: author)
        }
        let good = try op("the vault opens at 04:10", signedWith: room, by: alice)
        guard case .success(.encrypted(let sealed)) = PartitionRules.check(good, in: room.descriptor) else {
            Issue.record("a holder's op was refused: \(PartitionRules.check(good, in: room.descriptor))")
            return
        }
        // The content key opens it (round trip), and only with the right author and type.
        let opened = try #require(sealed.open(with: room.epochKey, type: OperationType.post.rawValue, author: alice.id))
        #expect(
            try OperationBody(type: OperationType.post.rawValue, decoding: opened)
                == .post(text: "the vault opens at 04:10", attachments: [], location: nil, replyTo: nil))
        #expect(sealed.open(with: room.epochKey, type: OperationType.post.rawValue, author: mallory.id) == nil)
        #expect(sealed.open(with: stranger.epochKey, type: OperationType.post.rawValue, author: alice.id) == nil)

        // Mallory, without the passphrase, signs with a key of her own guess: refused.
        let forged = try op("let me in", signedWith: stranger, by: mallory)
        #expect(PartitionRules.check(forged, in: room.descriptor) == .failure(.roomSignature))
        // Nor can she take alice's room signature for an op of her own (the author is signed).
        let copied = Operation.sign(
            type: .post, flags: .bodyEncrypted, partition: partition, seq: 1, prev: .zero, hlc: good.hlc, body: good.body, by: mallory)
        #expect(PartitionRules.check(copied, in: room.descriptor) == .failure(.roomSignature))
        // A holder's signature does not carry over to another place in the chain.
        let moved = Operation.sign(type: .post, flags: .bodyEncrypted, partition: partition, seq: 2, prev: good.id, hlc: good.hlc, body: good.body, by: alice)
        #expect(PartitionRules.check(moved, in: room.descriptor) == .failure(.roomSignature))
        // Plaintext and bodies too short to hold a signature are refused.
        let plain = Operation.sign(
            type: .post, flags: [], partition: partition, seq: 1, prev: .zero, hlc: good.hlc,
            body: OperationBody.post(text: "hi", attachments: [], location: nil, replyTo: nil).encoded, by: alice)
        #expect(PartitionRules.check(plain, in: room.descriptor) == .failure(.mustBeEncrypted))
        let short = Operation.sign(type: .post, flags: .bodyEncrypted, partition: partition, seq: 1, prev: .zero, hlc: good.hlc, body: [1, 2, 3], by: alice)
        #expect(PartitionRules.check(short, in: room.descriptor) == .failure(.roomSignature))
        let profile = Operation.sign(
            type: .profile, flags: .bodyEncrypted, partition: partition, seq: 1, prev: .zero, hlc: good.hlc, body: good.body, by: alice)
        #expect(PartitionRules.check(profile, in: room.descriptor) == .failure(.typeNotAllowed(.profile, .privateRoom)))
    }

    /// What one offline guess costs an attacker who knows a room's name: one derivation at the
    /// protocol's cost (printed; no speed is asserted).
    @Test func oneGuess_isOneArgon2idAtTheProtocolsCost() throws {
        #expect(PrivateRoomKeys.cost == PasswordHash.Cost(operations: 2, memoryBytes: 64 << 20))
        var fastest = Duration.seconds(3600)
        for _ in 0..<3 {
            let start = ContinuousClock.now
            _ = try PrivateRoomKeys.derive(name: name, passphrase: passphrase)
            fastest = min(fastest, ContinuousClock.now - start)
        }
        let millis = fastest.components.seconds * 1_000 + fastest.components.attoseconds / 1_000_000_000_000_000
        print("measured: one private-room key derivation (one offline guess), Argon2id 2 passes over 64 MiB: \(millis) ms (fastest of 3)")
    }

    @Test func roomLinkAndNotice_roundTrip() throws {
        let link = OperationBody.roomLink(predecessor: Bytes32([UInt8](repeating: 7, count: 32))!, contentKey: Bytes32([UInt8](repeating: 9, count: 32))!)
        #expect(try OperationBody(type: OperationType.roomLink.rawValue, decoding: link.encoded) == link)
        #expect(try OperationBody(type: OperationType.roomNotice.rawValue, decoding: []) == .roomNotice)
        #expect(OperationType.roomLink.rawValue == 0x15 && OperationType.roomNotice.rawValue == 0x16)
    }
}

extension Array where Element == UInt8 {
    fileprivate func containsSubsequence(_ needle: [UInt8]) -> Bool {
        guard needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { Array(self[$0..<$0 + needle.count]) == needle }
    }
}
