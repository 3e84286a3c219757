import Identity
import Replica
import Sodium
import TestSupport
import Testing
import Wire

/// Epoch keys, encrypted bodies, grants, invites and the key plan (docs/DESIGN.md §3.5).
@Suite struct EpochTests {
    let alice = Fixtures.identity(0)
    let bob = Fixtures.identity(1)
    let carol = Fixtures.identity(2)
    let conversation = Fixtures.conversation(creator: Fixtures.identity(0), seed: 1)
    let other = Fixtures.conversation(creator: Fixtures.identity(0), seed: 2)

    @Test func encryptedBody_opensWithItsKey_andIsBoundToConversationAuthorTypeAndEpoch() throws {
        let key = Fixtures.epochKey(conversation.id, epoch: 2, seed: 7)
        let plain = OperationBody.post(text: "hello", attachments: [], location: nil, replyTo: nil).encoded
        let bytes = try EncryptedBody.seal(plain, with: key, type: .post, author: alice.id)
        #expect(bytes.count == plain.count + EncryptedBody.overheadBytes)
        #expect(Array(bytes[0..<4]) == [0, 0, 0, 2])
        let body = try EncryptedBody(decoding: bytes)
        #expect(body.epoch == 2)
        #expect(body.open(with: key, type: OperationType.post.rawValue, author: alice.id) == plain)
        #expect(body.open(with: key, type: OperationType.edit.rawValue, author: alice.id) == nil)
        #expect(body.open(with: key, type: OperationType.post.rawValue, author: bob.id) == nil)
        #expect(body.open(with: Fixtures.epochKey(other.id, epoch: 2, seed: 7), type: OperationType.post.rawValue, author: alice.id) == nil)
        #expect(body.open(with: Fixtures.epochKey(conversation.id, epoch: 2, seed: 8), type: OperationType.post.rawValue, author: alice.id) == nil)
        var tampered = bytes
        tampered[tampered.count - 1] ^= 1
        #expect(try EncryptedBody(decoding: tampered).open(with: key, type: OperationType.post.rawValue, author: alice.id) == nil)
        #expect(throws: WireDecodingError.self) { try EncryptedBody(decoding: Array(bytes.prefix(EncryptedBody.overheadBytes - 1))) }
    }

    @Test func keyGrant_opensForEachMember_andOnlyAsThisConversationsKey() throws {
        let key = Fixtures.epochKey(conversation.id, epoch: 1, seed: 3)
        let grant = try KeyGrant(granting: key, to: [bob.id, alice.id, bob.id])
        #expect(grant.recipients == [alice.id, bob.id].sorted())
        #expect(grant.boxes.allSatisfy { $0.sealed.count == KeyGrant.sealedBytes })
        #expect(KeyGrant.sealedBytes == 68 + SealedBox.overheadBytes)
        for member in [alice, bob] {
            let opened = try #require(grant.open(for: member.id, keyPair: member.boxKeyPair, partition: conversation.id))
            #expect(opened.key == key.key && opened.id == key.id && opened.epoch == 1)
        }
        #expect(grant.open(for: carol.id, keyPair: carol.boxKeyPair, partition: conversation.id) == nil)
        // Bob's box copied into another conversation's grant (or under another epoch) is no key there.
        #expect(grant.open(for: bob.id, keyPair: bob.boxKeyPair, partition: other.id) == nil)
        var moved = grant
        moved.epoch = 2
        #expect(moved.open(for: bob.id, keyPair: bob.boxKeyPair, partition: conversation.id) == nil)
        var relabelled = grant
        relabelled.keyID = Fixtures.epochKey(conversation.id, epoch: 1, seed: 4).id
        #expect(relabelled.open(for: bob.id, keyPair: bob.boxKeyPair, partition: conversation.id) == nil)
        // Carol cannot open bob's box even if it is listed under her name.
        var stolen = grant
        stolen.boxes[stolen.boxes.firstIndex { $0.member == bob.id }!].member = carol.id
        #expect(stolen.open(for: carol.id, keyPair: carol.boxKeyPair, partition: conversation.id) == nil)
    }

    @Test func invite_opensForTheInboxOwnerOnly() throws {
        let sealed = try Invite.seal(conversation, to: bob.id)
        #expect(sealed.count == 65 + SealedBox.overheadBytes)
        #expect(Invite.open(sealed, with: bob.boxKeyPair) == conversation)
        #expect(Invite.open(sealed, with: carol.boxKeyPair) == nil)
    }

    // MARK: The key plan

    func membership(current: Set<UserID>, ever: Set<UserID>? = nil) -> Membership.State {
        var state = Membership.State()
        state.current = current
        state.everMember = ever ?? current
        return state
    }

    func grant(_ author: Identity, _ epoch: UInt32, _ key: EpochKey, _ recipients: [Identity]) -> EpochPlan.Grant {
        EpochPlan.Grant(author: author.id, epoch: epoch, keyID: key.id, recipients: Set(recipients.map(\.id)))
    }

    @Test func plan_rotatesWithoutAKeyForTheRequiredEpoch_writesWithOne_andSharesWithTheUnreached() {
        let k0 = Fixtures.epochKey(conversation.id, epoch: 0, seed: 1), k1 = Fixtures.epochKey(conversation.id, epoch: 1, seed: 2)
        let members = membership(current: [alice.id, bob.id, carol.id])
        let grants = [grant(alice, 0, k0, [alice, bob])]
        #expect(
            EpochPlan.plan(for: alice.id, membership: members, requiredEpoch: 1, grants: grants, heldKeys: [k0.id: 0])
                == .rotate(epoch: 1, recipients: [alice.id, bob.id, carol.id].sorted()))
        #expect(
            EpochPlan.plan(for: alice.id, membership: members, requiredEpoch: 0, grants: grants, heldKeys: [k0.id: 0])
                == .write(epoch: 0, keyID: k0.id, shareWith: [carol.id]))
        let withShare = grants + [grant(bob, 0, k0, [carol])]
        #expect(
            EpochPlan.plan(for: carol.id, membership: members, requiredEpoch: 0, grants: withShare, heldKeys: [k0.id: 0])
                == .write(epoch: 0, keyID: k0.id, shareWith: []))
        #expect(
            EpochPlan.plan(for: alice.id, membership: membership(current: [bob.id]), requiredEpoch: 1, grants: grants, heldKeys: [k1.id: 1])
                == .notMember)
    }

    @Test func plan_trustsOnlyCurrentMembersKeys_andPicksTheSmallestKeyID() {
        let ka = Fixtures.epochKey(conversation.id, epoch: 1, seed: 5), kb = Fixtures.epochKey(conversation.id, epoch: 1, seed: 6)
        let kx = Fixtures.epochKey(conversation.id, epoch: 1, seed: 9)
        let members = membership(current: [alice.id, bob.id], ever: [alice.id, bob.id, carol.id])
        // Carol (removed) offers her own epoch-1 key: readable, never written with.
        let carols = [grant(carol, 1, kx, [alice, bob, carol])]
        #expect(
            EpochPlan.plan(for: bob.id, membership: members, requiredEpoch: 1, grants: carols, heldKeys: [kx.id: 1])
                == .rotate(epoch: 1, recipients: [alice.id, bob.id].sorted()))
        let concurrent = carols + [grant(alice, 1, ka, [alice, bob]), grant(bob, 1, kb, [alice, bob])]
        let held = [ka.id: UInt32(1), kb.id: 1, kx.id: 1]
        #expect(
            EpochPlan.plan(for: bob.id, membership: members, requiredEpoch: 1, grants: concurrent, heldKeys: held)
                == .write(epoch: 1, keyID: min(ka.id, kb.id), shareWith: []))
        // A grant for a later epoch than the removals call for is not used for writing either.
        #expect(
            EpochPlan.plan(for: bob.id, membership: members, requiredEpoch: 0, grants: concurrent, heldKeys: held)
                == .rotate(epoch: 0, recipients: [alice.id, bob.id].sorted()))
    }
}
