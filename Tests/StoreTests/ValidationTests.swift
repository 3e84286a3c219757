import Identity
import Replica
import Store
import TestSupport
import Testing
import Wire

/// Every replica refuses what breaks the envelope or a partition's rules, and stores nothing of it.
@Suite struct ValidationTests {
    let alice = Fixtures.identity(0)
    let bob = Fixtures.identity(1)
    let carol = Fixtures.identity(2)
    let lobby = PartitionDescriptor.room(RoomName("lobby")!)

    @Test func tamperedByte_inHeaderOrBody_isRejectedAndNothingStored() throws {
        var factory = OpFactory()
        let first = factory.make(post("first"), in: lobby.id, by: alice)
        let op = factory.make(post("hello there"), in: lobby.id, by: alice)
        let store = try Fixtures.store(partitions: [lobby])
        #expect(try store.apply(first, nowMillis: Fixtures.now()) == .applied)
        let encoded = op.encoded
        for index in 0..<encoded.count {
            var bytes = encoded
            bytes[index] ^= 0x01
            let tampered: Operation
            do {
                tampered = try Operation(encoded: bytes)
            } catch {
                continue  // refused while parsing (version, length, seq/prev layout): nothing to store
            }
            let outcome = try store.apply(tampered, nowMillis: Fixtures.now())
            switch outcome {
            case .rejected, .pending: break
            default: Issue.record("byte \(index) flipped gave \(outcome)")
            }
            #expect(try store.log.opCount(lobby.id) == 1, "byte \(index) flipped left something stored")
        }
        #expect(try store.apply(op, nowMillis: Fixtures.now()) == .applied)
    }

    @Test(arguments: [
        (Operation.signedBytes + 5, RejectReason.invalid(.badSignature)),  // signature
        (112 + 7, RejectReason.invalid(.badSignature)),  // hlc
        (120 + 3, RejectReason.invalid(.bodyHashMismatch)),  // body hash
        (80 + 1, RejectReason.invalid(.brokenChain)),  // prev
        (Operation.headerBytes + 2, RejectReason.invalid(.bodyHashMismatch)),  // body
    ])
    func tamperedField_givesItsSpecificError(byteIndex: Int, expected: RejectReason) throws {
        var factory = OpFactory()
        let first = factory.make(post("first"), in: lobby.id, by: alice)
        let op = factory.make(post("hello"), in: lobby.id, by: alice)
        let store = try Fixtures.store(partitions: [lobby])
        _ = try store.apply(first, nowMillis: Fixtures.now())
        var bytes = op.encoded
        bytes[byteIndex] ^= 0x80
        let tampered = try Operation(encoded: bytes)
        #expect(try store.apply(tampered, nowMillis: Fixtures.now()) == .rejected(expected))
        #expect(try store.log.opCount(lobby.id) == 1)
    }

    @Test func forgedAuthor_failsTheSignatureCheck() throws {
        var factory = OpFactory()
        let op = factory.make(post("from alice"), in: lobby.id, by: alice)
        var header = op.header
        header.replaceSubrange(40..<72, with: bob.id.publicKey)  // claim bob wrote it
        let forged = try Operation(header: header, body: op.body)
        let store = try Fixtures.store(partitions: [lobby])
        #expect(try store.apply(forged, nowMillis: Fixtures.now()) == .rejected(.invalid(.badSignature)))
        #expect(try store.log.opCount(lobby.id) == 0)
    }

    @Test func malformedEnvelopes_areRefusedWhileParsing() throws {
        var factory = OpFactory()
        let op = factory.make(post("x"), in: lobby.id, by: alice)
        #expect(throws: OperationError.self) { try Operation(encoded: Array(op.encoded.prefix(100))) }
        #expect(throws: OperationError.self) { try Operation(encoded: op.encoded + [0]) }
        var badVersion = op.encoded
        badVersion[0] = 9
        #expect(throws: OperationError.unsupportedVersion(9)) { try Operation(encoded: badVersion) }
        var huge = op.header
        huge[4] = 0x7f  // body length far over 64 KiB
        #expect(throws: OperationError.bodyTooLarge(0x7f00_0000 | Int(huge[5]) << 16 | Int(huge[6]) << 8 | Int(huge[7]))) {
            try Operation(header: huge, body: op.body)
        }
    }

    @Test func profileWrittenForSomeoneElse_isRejected() throws {
        var factory = OpFactory()
        let op = factory.make(
            .profile(subject: bob.id, nick: "bob", displayName: nil, status: nil, presence: nil, avatar: nil),
            in: PartitionDescriptor.directory.id, by: alice)
        let store = try Fixtures.store()
        #expect(try store.apply(op, nowMillis: Fixtures.now()) == .rejected(.rule(.notOwnProfile)))
        #expect(try store.directory.profiles().isEmpty)
    }

    @Test func editOfAnotherAuthorsMessage_isRejected() throws {
        var factory = OpFactory()
        let original = factory.make(post("bob's words"), in: lobby.id, by: bob)
        let hijack = factory.make(.edit(target: original.id, targetSeq: original.seq, text: "alice's words"), in: lobby.id, by: alice)
        let delete = factory.make(.delete(target: original.id, targetSeq: original.seq), in: lobby.id, by: carol)
        let store = try Fixtures.store(partitions: [lobby])
        #expect(try store.apply(original, nowMillis: Fixtures.now()) == .applied)
        #expect(try store.apply(hijack, nowMillis: Fixtures.now()) == .rejected(.rule(.notAuthorOfTarget)))
        #expect(try store.apply(delete, nowMillis: Fixtures.now()) == .rejected(.rule(.notAuthorOfTarget)))
        #expect(try store.views.history(lobby.id).map(\.text) == ["bob's words"])
    }

    @Test func postByNonMember_isRejected_untilTheirAddArrives() throws {
        var factory = OpFactory()
        let conversation = PartitionDescriptor.conversation(creator: alice.id, nonce: Bytes32(w0: 7, w1: 7, w2: 7, w3: 7))
        let key = Fixtures.epochKey(conversation.id, epoch: 0, seed: 7)
        let create = factory.make(.conversationCreate(name: "", members: [bob.id]), in: conversation.id, by: alice)
        let grant = factory.makeGrant(key, to: [alice.id, bob.id], by: alice)
        let intruder = factory.makeEncrypted(post("let me in"), with: key, by: carol)
        let add = factory.make(.memberAdd(carol.id), in: conversation.id, by: bob)
        let store = try Fixtures.store(partitions: [conversation])
        try store.useIdentity(alice)
        #expect(try store.apply([create, grant], nowMillis: Fixtures.now()) == [.applied, .applied])
        #expect(try store.apply(intruder, nowMillis: Fixtures.now()) == .rejected(.rule(.notMember)))
        #expect(try store.views.history(conversation.id).isEmpty)
        #expect(try store.apply(add, nowMillis: Fixtures.now()) == .applied)
        #expect(try store.apply(intruder, nowMillis: Fixtures.now()) == .applied)
        #expect(try store.views.history(conversation.id).map(\.text) == ["let me in"])
    }

    @Test func onlyTheCreator_createsAndRemoves() throws {
        var factory = OpFactory()
        let conversation = PartitionDescriptor.conversation(creator: alice.id, nonce: Bytes32(w0: 1, w1: 2, w2: 3, w3: 4))
        let fakeCreate = factory.make(.conversationCreate(name: "", members: []), in: conversation.id, by: bob)
        let create = factory.make(.conversationCreate(name: "", members: [bob.id, carol.id]), in: conversation.id, by: alice)
        // Bob's first op in the chain (his refused fake create took no place): a remove by a member
        // who is not the creator nor one of the creator's devices.
        var bobsChain = OpFactory()
        let remove = bobsChain.make(.memberRemove(carol.id), in: conversation.id, by: bob)
        let store = try Fixtures.store(partitions: [conversation])
        #expect(try store.apply(fakeCreate, nowMillis: Fixtures.now()) == .rejected(.rule(.creatorOnly)))
        #expect(try store.apply(create, nowMillis: Fixtures.now()) == .applied)
        #expect(try store.apply(remove, nowMillis: Fixtures.now()) == .rejected(.rule(.creatorOnly)))
        #expect(try store.views.conversation(conversation.id)?.members.current == [alice.id, bob.id, carol.id])
    }

    @Test func conversationBodies_mustBeEncrypted_andMembershipPlain_andTheNamePrivate() throws {
        var factory = OpFactory()
        let conversation = PartitionDescriptor.conversation(creator: alice.id, nonce: Bytes32(w0: 3, w1: 3, w2: 3, w3: 3))
        let key = Fixtures.epochKey(conversation.id, epoch: 0, seed: 3)
        let named = factory.make(.conversationCreate(name: "secret plans", members: [bob.id]), in: conversation.id, by: alice, seq: 1, prev: .zero)
        let create = factory.make(.conversationCreate(name: "", members: [bob.id]), in: conversation.id, by: alice)
        let plainPost = factory.make(post("readable by carriers"), in: conversation.id, by: bob, seq: 1, prev: .zero)
        let sealedAddBody = try EncryptedBody.seal(OperationBody.memberAdd(carol.id).encoded, with: key, type: .memberAdd, author: bob.id)
        let sealedAdd = factory.make(type: .memberAdd, flags: .bodyEncrypted, body: sealedAddBody, in: conversation.id, by: bob, seq: 1, prev: .zero)
        let short = factory.make(type: .post, flags: .bodyEncrypted, body: [0, 0, 0, 0, 1], in: conversation.id, by: bob, seq: 1, prev: .zero)
        let store = try Fixtures.store(partitions: [conversation])
        #expect(try store.apply(named, nowMillis: Fixtures.now()) == .rejected(.rule(.nameInPlaintext)))
        #expect(try store.apply(create, nowMillis: Fixtures.now()) == .applied)
        #expect(try store.apply(plainPost, nowMillis: Fixtures.now()) == .rejected(.rule(.mustBeEncrypted)))
        #expect(try store.apply(sealedAdd, nowMillis: Fixtures.now()) == .rejected(.rule(.mustBePlaintext)))
        guard case .rejected(.rule(.invalidBody)) = try store.apply(short, nowMillis: Fixtures.now()) else {
            Issue.record("a 5-byte encrypted body was not refused as invalid")
            return
        }
        #expect(try store.log.opCount(conversation.id) == 1)
    }

    @Test func inbox_acceptsOnlySealedInvites_fromAnyone() throws {
        var factory = OpFactory()
        let inbox = PartitionDescriptor.inbox(owner: bob.id)
        let conversation = Fixtures.conversation(creator: alice, seed: 4)
        let invite = factory.makeInvite(to: bob.id, conversation: conversation, by: carol)
        let plain = factory.make(type: .invite, flags: [], body: OperationBody.invite(conversation: conversation).encoded, in: inbox.id, by: alice)
        let stray = factory.make(post("hi"), in: inbox.id, by: alice, seq: 1, prev: .zero)
        let store = try Fixtures.store(partitions: [inbox])
        #expect(try store.apply(invite, nowMillis: Fixtures.now()) == .applied)
        #expect(try store.apply(plain, nowMillis: Fixtures.now()) == .rejected(.rule(.mustBeEncrypted)))
        #expect(try store.apply(stray, nowMillis: Fixtures.now()) == .rejected(.rule(.typeNotAllowed(.post, .inbox))))
    }

    @Test func writeIntoSomeoneElsesSelfPartition_isRejected() throws {
        var factory = OpFactory()
        let bobsOwn = PartitionDescriptor.ownData(owner: bob.id)
        let op = factory.make(.readMarker(partition: lobby.id, position: HLC(raw: 5)), in: bobsOwn.id, by: alice)
        let store = try Fixtures.store(partitions: [bobsOwn])
        #expect(try store.apply(op, nowMillis: Fixtures.now()) == .rejected(.rule(.notOwner)))
    }

    @Test func opTypeOutsideItsPartitionKind_isRejected() throws {
        var factory = OpFactory()
        let op = factory.make(.profile(subject: alice.id, nick: "a", displayName: nil, status: nil, presence: nil, avatar: nil), in: lobby.id, by: alice)
        let store = try Fixtures.store(partitions: [lobby])
        #expect(try store.apply(op, nowMillis: Fixtures.now()) == .rejected(.rule(.typeNotAllowed(.profile, .room))))
    }

    @Test func opForUnknownPartition_isRejected() throws {
        var factory = OpFactory()
        let op = factory.make(post("hi"), in: lobby.id, by: alice)
        let store = try Fixtures.store()
        #expect(try store.apply(op, nowMillis: Fixtures.now()) == .rejected(.unknownPartition))
    }

    @Test func gapInTheChain_isPending_andDuplicatesAreHarmless() throws {
        var factory = OpFactory()
        let ops = (1...3).map { factory.make(post("m\($0)"), in: lobby.id, by: alice) }
        let store = try Fixtures.store(partitions: [lobby])
        #expect(try store.apply(ops[2], nowMillis: Fixtures.now()) == .pending(missingFrom: 1))
        #expect(try store.apply(ops[0], nowMillis: Fixtures.now()) == .applied)
        #expect(try store.apply(ops[0], nowMillis: Fixtures.now()) == .duplicate)
        #expect(try store.apply(ops[2], nowMillis: Fixtures.now()) == .pending(missingFrom: 2))
        #expect(try store.apply(Array(ops[1...]), nowMillis: Fixtures.now()) == [.applied, .applied])
        #expect(try store.views.history(lobby.id).map(\.text) == ["m1", "m2", "m3"])
    }
}
