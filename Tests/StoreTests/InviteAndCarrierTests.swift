import Foundation
import Identity
import Replica
import Store
import TestSupport
import Testing
import Wire

/// Invites through inboxes, rules members apply at view time, and the carrier quota.
@Suite struct InviteAndCarrierTests {
    let alice = Fixtures.identity(0)
    let bob = Fixtures.identity(1)
    let carol = Fixtures.identity(2)
    let dave = Fixtures.identity(3)
    let now = Fixtures.now()

    @Test func invite_reachesAMemberThroughAThirdReplica_whenTheCreatorNeverLinksAgain() throws {
        let a = try Nodes.store(alice), b = try Nodes.store(bob), c = try Nodes.store(carol)
        let conversation = try a.createConversation(name: "plans", members: [bob.id, carol.id], by: alice, nowMillis: now)
        try a.author(post("meet at the harbour"), in: conversation.id, by: alice, nowMillis: now + 1)
        // Alice meets only carol, then is gone for good.
        try Nodes.sync([a, c])
        // Bob meets only carol. First his inbox: he does not even know the conversation's id yet.
        let bobsInbox = PartitionDescriptor.inbox(owner: bob.id)
        try Nodes.sync([c, b], only: [bobsInbox.id])
        #expect(try b.log.partition(conversation.id) == nil)
        #expect(try b.processInbox(me: bob) == [conversation])
        #expect(try b.processInbox(me: bob).isEmpty)  // idempotent
        // Now that he holds the descriptor, the conversation itself comes from carol too.
        try Nodes.sync([c, b], only: [conversation.id])
        #expect(try Nodes.texts(b, conversation) == ["meet at the harbour"])
        #expect(try b.views.conversations(reader: bob.id).map(\.name) == ["plans"])
        #expect(try b.log.digest(conversation.id) == a.log.digest(conversation.id))
    }

    @Test func oldInvite_neverUndoesALeave() throws {
        let a = try Nodes.store(alice), b = try Nodes.store(bob)
        let conversation = try a.createConversation(name: "plans", members: [bob.id], by: alice, nowMillis: now)
        try Nodes.sync([a, b])
        try b.processInbox(me: bob)
        try b.author(.memberLeave, in: conversation.id, by: bob, nowMillis: now + 1)
        try b.log.setJoined(conversation.id, false)
        // Bob's second device holds his ops (the leave) before it reads his inbox.
        let second = try Nodes.store(bob)
        try Nodes.sync([b, second])
        #expect(try second.processInbox(me: bob).isEmpty)
        #expect(try second.views.conversations(reader: bob.id).isEmpty)
    }

    @Test func ruleBreakingEncryptedEdit_isStoredEverywhere_butChangesNoMembersView() throws {
        var factory = OpFactory()
        let conversation = Fixtures.conversation(creator: alice, seed: 11)
        let key = Fixtures.epochKey(conversation.id, epoch: 0, seed: 11)
        let create = factory.make(.conversationCreate(name: "", members: [bob.id, carol.id]), in: conversation.id, by: alice)
        let grant = factory.makeGrant(key, to: [alice.id, bob.id, carol.id], by: alice)
        let original = factory.makeEncrypted(post("alice's words"), with: key, by: alice)
        // Bob edits and deletes alice's post: the target is inside the ciphertext, so no carrier
        // could refuse these; members ignore them when they build their views.
        let hijack = factory.makeEncrypted(.edit(target: original.id, targetSeq: original.seq, text: "bob's words"), with: key, by: bob)
        let erase = factory.makeEncrypted(.delete(target: original.id, targetSeq: 0), with: key, by: bob)
        let ownEdit = factory.makeEncrypted(.edit(target: original.id, targetSeq: original.seq, text: "alice's better words"), with: key, by: alice)
        let ops = [create, grant, original, hijack, erase, ownEdit]

        let members = try [alice, bob, carol].map { try Nodes.store($0) }
        let carrier = try Nodes.store(dave)
        for store in members + [carrier] {
            try store.log.ensurePartition(conversation, joined: false)
            #expect(try store.apply(ops.reversed(), nowMillis: now).filter { $0 == .applied }.count < ops.count)  // out of order first
            _ = try store.apply(ops, nowMillis: now)
            for op in ops { #expect(try store.log.contains(op)) }
            #expect(try store.log.digest(conversation.id) == members[0].log.digest(conversation.id))
        }
        for store in members {
            let history = try store.views.history(conversation.id)
            #expect(history.map(\.text) == ["alice's better words"])
            #expect(history.map(\.deleted) == [false])
            #expect(try store.views.viewSnapshot() == members[0].views.viewSnapshot())
        }
        #expect(try carrier.views.history(conversation.id).isEmpty)
    }

    @Test func removedMembersLaterWrites_withAnOldKey_takeNoEffect() throws {
        var factory = OpFactory()
        let conversation = Fixtures.conversation(creator: alice, seed: 12)
        let k0 = Fixtures.epochKey(conversation.id, epoch: 0, seed: 1), k1 = Fixtures.epochKey(conversation.id, epoch: 1, seed: 2)
        let before = factory.makeEncrypted(post("carol, before"), with: k0, by: carol)
        var ops = [
            factory.make(.conversationCreate(name: "", members: [bob.id, carol.id]), in: conversation.id, by: alice),
            factory.makeGrant(k0, to: [alice.id, bob.id, carol.id], by: alice),
        ]
        ops.append(before)
        ops += [
            factory.make(.memberRemove(carol.id), in: conversation.id, by: alice),
            factory.makeGrant(k1, to: [alice.id, bob.id], by: alice),
            factory.makeEncrypted(post("carol, after her removal"), with: k0, by: carol),
            factory.makeEncrypted(.edit(target: before.id, targetSeq: before.seq, text: "carol rewrites history"), with: k0, by: carol),
            factory.makeEncrypted(.taskCreate(title: "carol's task", owner: nil), with: k0, by: carol),
            factory.makeEncrypted(.react(target: before.id, emoji: "👎", on: true), with: k0, by: carol),
            // A removed member's own key for a later epoch is not trusted for writing.
            factory.makeGrant(Fixtures.epochKey(conversation.id, epoch: 1, seed: 9), to: [alice.id, bob.id, carol.id], by: carol),
            factory.makeEncrypted(post("bob, after"), with: k1, by: bob),
        ]
        let b = try Nodes.store(bob)
        try b.log.ensurePartition(conversation, joined: true)
        #expect(try b.apply(ops, nowMillis: now).allSatisfy { $0 == .applied })
        #expect(try Nodes.texts(b, conversation) == ["carol, before", "bob, after"])
        #expect(try b.views.history(conversation.id).first?.reactions.isEmpty == true)
        #expect(try b.views.tasks(conversation.id).isEmpty)
        // Bob writes with alice's epoch-1 key, not the one carol offered.
        let op = try b.author(post("bob again"), in: conversation.id, by: bob, nowMillis: now + 1)
        #expect(try EncryptedBody(decoding: op.body).open(with: k1, type: op.type, author: bob.id) != nil)
    }

    @Test func carrierQuota_stopsCarrying_whileMembersKeepEverything() throws {
        let a = try Nodes.store(alice), b = try Nodes.store(bob)
        let conversation = try a.createConversation(name: "chatty", members: [bob.id], by: alice, nowMillis: now)
        for i in 0..<20 { try a.author(post("message number \(i) with some padding text"), in: conversation.id, by: alice, nowMillis: now + UInt64(i)) }
        let ops = try a.log.allOps(in: conversation.id)
        let carrier = try Nodes.store(dave)
        carrier.carrier.carrierQuotaBytes = 4_000
        b.carrier.carrierQuotaBytes = 4_000
        try carrier.log.ensurePartition(conversation, joined: false)
        try b.log.ensurePartition(conversation, joined: false)
        let outcomes = try carrier.apply(ops, nowMillis: now)
        #expect(outcomes.contains(.rejected(.rule(.quotaExceeded))))
        #expect(try carrier.carrier.isCarried(conversation.id))
        #expect(try carrier.carrier.storedBytes(conversation.id) <= 4_000)
        #expect(RuleViolation.quotaExceeded.mayResolveLater)
        // A member (bob, once the create names him) never applies the quota.
        #expect(try b.apply(ops, nowMillis: now).allSatisfy { $0 == .applied })
        #expect(try b.log.digest(conversation.id) == a.log.digest(conversation.id))
        #expect(try !b.carrier.isCarried(conversation.id))
    }
}
