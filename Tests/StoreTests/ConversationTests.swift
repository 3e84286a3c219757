import Foundation
import Identity
import Replica
import Store
import TestSupport
import Testing
import Wire

/// Private conversations end to end (docs/DESIGN.md §3.5), with stores as nodes: members read every
/// body, carriers hold the same ops without a readable byte, removals and leaves lock out later
/// messages, and concurrent membership changes and rotations converge.
@Suite struct ConversationTests {
    let alice = Fixtures.identity(0)
    let bob = Fixtures.identity(1)
    let carol = Fixtures.identity(2)
    let dave = Fixtures.identity(3)
    let now = Fixtures.now()

    @Test func threeMembers_readEveryBody_andACarrierHoldsTheSameOps_withNoPlaintextAnywhere() throws {
        try Nodes.withTemporaryDirectory { dir in
            let alicePath = dir + "/alice.db", davePath = dir + "/dave.db"
            let a = try ReplicaStore(path: alicePath)
            try a.useIdentity(alice)
            let b = try Nodes.store(bob), c = try Nodes.store(carol)
            let d = try ReplicaStore(path: davePath)
            try d.useIdentity(dave)

            let conversation = try a.createConversation(name: "Operation Nightjar", members: [bob.id, carol.id], by: alice, nowMillis: now)
            try Nodes.sync([a, b, c, d])
            #expect(try b.processInbox(me: bob) == [conversation])
            #expect(try c.processInbox(me: carol) == [conversation])
            #expect(try d.processInbox(me: dave).isEmpty)

            let first = try a.author(post("the eagle lands at dawn"), in: conversation.id, by: alice, nowMillis: now + 1)
            try b.author(post("copy that, bringing the maps"), in: conversation.id, by: bob, nowMillis: now + 2)
            try Nodes.sync([a, b, c, d])
            try c.author(.react(target: first.id, emoji: "👍", on: true), in: conversation.id, by: carol, nowMillis: now + 3)
            try a.author(.edit(target: first.id, text: "the eagle lands at dusk"), in: conversation.id, by: alice, nowMillis: now + 4)
            try c.author(.taskCreate(title: "pack the lanterns", owner: carol.id), in: conversation.id, by: carol, nowMillis: now + 5)
            try b.author(.conversationRename(name: "Nightjar, phase two"), in: conversation.id, by: bob, nowMillis: now + 6)
            try Nodes.sync([a, b, c, d])

            let digest = try a.log.digest(conversation.id)
            for store in [b, c, d] { #expect(try store.log.digest(conversation.id) == digest) }
            for store in [a, b, c] {
                #expect(try Nodes.texts(store, conversation) == ["the eagle lands at dusk", "copy that, bringing the maps"])
                #expect(try store.views.history(conversation.id).first?.reactions == ["👍": [carol.id]])
                #expect(try store.views.tasks(conversation.id).map(\.title) == ["pack the lanterns"])
                #expect(try store.views.conversation(conversation.id)?.name == "Nightjar, phase two")
                #expect(try store.views.conversations(reader: alice.id).map(\.name) == ["Nightjar, phase two"])
            }
            // Members with the same keys have the same views.
            #expect(try a.views.viewSnapshot() == b.views.viewSnapshot())
            #expect(try b.views.viewSnapshot() == c.views.viewSnapshot())

            // The carrier: the same ops, nothing readable through any query...
            #expect(try d.carrier.isCarried(conversation.id))
            #expect(try d.views.history(conversation.id).isEmpty)
            #expect(try d.views.tasks(conversation.id).isEmpty)
            #expect(try d.views.conversation(conversation.id)?.name == "")
            #expect(try d.views.conversation(conversation.id)?.members.current == [alice.id, bob.id, carol.id])
            #expect(try d.views.conversations(reader: dave.id).isEmpty)
            #expect(try d.keys.heldEpochs(conversation.id).isEmpty)
            #expect(try d.views.message(first.id) == nil)
            // ...and not a byte of plaintext in its files, where a member's files have it.
            let secrets = ["eagle lands", "bringing the maps", "pack the lanterns", "Nightjar", "dusk", "👍"]
            let daveBytes = Nodes.fileBytes(davePath)
            #expect(daveBytes.count > 10_000)
            for secret in secrets {
                #expect(daveBytes.range(of: Data(secret.utf8)) == nil, "the carrier's database holds '\(secret)'")
            }
            #expect(Nodes.fileBytes(alicePath).range(of: Data("pack the lanterns".utf8)) != nil)
        }
    }

    @Test func removedMember_readsWhatCameBefore_butNothingAfter_andCannotWrite() throws {
        let a = try Nodes.store(alice), b = try Nodes.store(bob), c = try Nodes.store(carol)
        let conversation = try a.createConversation(name: "trio", members: [bob.id, carol.id], by: alice, nowMillis: now)
        try a.author(post("before"), in: conversation.id, by: alice, nowMillis: now + 1)
        try Nodes.sync([a, b, c])
        try a.author(.memberRemove(carol.id), in: conversation.id, by: alice, nowMillis: now + 2)
        try Nodes.sync([a, b, c])
        try b.author(post("after"), in: conversation.id, by: bob, nowMillis: now + 3)
        try a.author(post("after, from alice"), in: conversation.id, by: alice, nowMillis: now + 4)
        try Nodes.sync([a, b, c])

        #expect(try a.log.digest(conversation.id) == c.log.digest(conversation.id))
        #expect(try Nodes.texts(a, conversation) == ["before", "after", "after, from alice"])
        #expect(try Nodes.texts(b, conversation) == ["before", "after", "after, from alice"])
        #expect(try Nodes.texts(c, conversation) == ["before"])
        #expect(try a.keys.requiredEpoch(conversation.id, devices: a.devices) == 1)
        #expect(try a.keys.heldEpochs(conversation.id) == [0, 1])
        #expect(try c.keys.heldEpochs(conversation.id) == [0])
        #expect(throws: StoreError.notMember(conversation.id)) {
            try c.author(post("still here?"), in: conversation.id, by: carol, nowMillis: now + 5)
        }
        #expect(try c.views.conversation(conversation.id)?.members.current == [alice.id, bob.id])
    }

    @Test func leaveOfTheCreator_isRotatedByTheNextRemainingWriter() throws {
        let a = try Nodes.store(alice), b = try Nodes.store(bob), c = try Nodes.store(carol)
        let conversation = try a.createConversation(name: "trio", members: [bob.id, carol.id], by: alice, nowMillis: now)
        try a.author(post("hello"), in: conversation.id, by: alice, nowMillis: now + 1)
        try a.author(.memberLeave, in: conversation.id, by: alice, nowMillis: now + 2)
        try Nodes.sync([a, b, c])
        try b.author(post("alice is gone"), in: conversation.id, by: bob, nowMillis: now + 3)
        try Nodes.sync([a, b, c])
        try c.author(post("so it seems"), in: conversation.id, by: carol, nowMillis: now + 4)
        try Nodes.sync([a, b, c])

        #expect(try Nodes.texts(c, conversation) == ["hello", "alice is gone", "so it seems"])
        #expect(try Nodes.texts(b, conversation) == ["hello", "alice is gone", "so it seems"])
        #expect(try Nodes.texts(a, conversation) == ["hello"])
        #expect(try b.keys.heldEpochs(conversation.id) == [0, 1])
        #expect(throws: StoreError.notMember(conversation.id)) {
            try a.author(post("wait"), in: conversation.id, by: alice, nowMillis: now + 5)
        }
    }

    @Test func concurrentAddAndRemove_converge_andTheNewMemberIsGivenTheNewKey() throws {
        let a = try Nodes.store(alice), b = try Nodes.store(bob), c = try Nodes.store(carol), d = try Nodes.store(dave)
        let conversation = try a.createConversation(name: "crew", members: [bob.id, carol.id], by: alice, nowMillis: now)
        try Nodes.sync([a, b, c, d])
        // Without seeing each other: alice removes carol, bob adds dave.
        try a.author(.memberRemove(carol.id), in: conversation.id, by: alice, nowMillis: now + 10)
        try a.author(post("carol is out"), in: conversation.id, by: alice, nowMillis: now + 11)
        try b.author(.memberAdd(dave.id), in: conversation.id, by: bob, nowMillis: now + 10)
        try b.author(post("welcome dave"), in: conversation.id, by: bob, nowMillis: now + 12)
        try Nodes.sync([a, b, c, d])
        #expect(try d.processInbox(me: dave) == [conversation])

        for store in [a, b, c, d] {
            #expect(try store.views.conversation(conversation.id)?.members.current == [alice.id, bob.id, dave.id])
            #expect(try store.log.digest(conversation.id) == a.log.digest(conversation.id))
        }
        // Bob wrote before he saw the removal (epoch 0): carol reads that one, which is the
        // window no scheme can close. Dave has only epoch 0 so far.
        #expect(try Nodes.texts(d, conversation) == ["welcome dave"])
        #expect(try Nodes.texts(c, conversation) == ["welcome dave"])
        #expect(try Nodes.texts(a, conversation) == ["carol is out", "welcome dave"])

        // Bob's next write shares the epoch-1 key with dave, who then reads everything after.
        try b.author(post("catching up"), in: conversation.id, by: bob, nowMillis: now + 13)
        try Nodes.sync([a, b, c, d])
        for store in [a, b, d] {
            #expect(try Nodes.texts(store, conversation) == ["carol is out", "welcome dave", "catching up"])
        }
        #expect(try Nodes.texts(c, conversation) == ["welcome dave"])
    }

    @Test func concurrentRotations_forOneEpoch_areBothReadByEveryMember() throws {
        let a = try Nodes.store(alice), b = try Nodes.store(bob), c = try Nodes.store(carol), d = try Nodes.store(dave)
        let conversation = try a.createConversation(name: "four", members: [bob.id, carol.id, dave.id], by: alice, nowMillis: now)
        try Nodes.sync([a, b, c, d])
        try d.author(.memberLeave, in: conversation.id, by: dave, nowMillis: now + 1)
        try Nodes.sync([a, b, c, d])
        // Alice and bob both write first after the leave, each rotating to epoch 1.
        try a.author(post("from alice"), in: conversation.id, by: alice, nowMillis: now + 2)
        try b.author(post("from bob"), in: conversation.id, by: bob, nowMillis: now + 2)
        try Nodes.sync([a, b, c, d])
        try c.author(post("from carol"), in: conversation.id, by: carol, nowMillis: now + 3)
        try Nodes.sync([a, b, c, d])

        #expect(try c.keys.heldEpochs(conversation.id) == [0, 1, 1])
        #expect(try d.keys.heldEpochs(conversation.id) == [0])
        for store in [a, b, c] {
            #expect(Set(try Nodes.texts(store, conversation)) == ["from alice", "from bob", "from carol"])
        }
        #expect(try Nodes.texts(d, conversation).isEmpty)
        #expect(try a.views.viewSnapshot() == b.views.viewSnapshot())
        #expect(try b.views.viewSnapshot() == c.views.viewSnapshot())
    }

    @Test func unreadCounts_inAConversation_comeFromReadMarkers() throws {
        let a = try Nodes.store(alice), b = try Nodes.store(bob)
        let conversation = try a.createConversation(name: "pair", members: [bob.id], by: alice, nowMillis: now)
        try Nodes.sync([a, b])
        try b.processInbox(me: bob)
        try b.author(post("one"), in: conversation.id, by: bob, nowMillis: now + 1)
        try b.author(post("two"), in: conversation.id, by: bob, nowMillis: now + 2)
        try Nodes.sync([a, b])
        #expect(try a.views.conversations(reader: alice.id).map(\.unread) == [2])
        let newest = try #require(try a.views.newestMessageHLC(conversation.id))
        let ownData = PartitionDescriptor.ownData(owner: alice.id)
        try a.log.ensurePartition(ownData, joined: true)
        try a.author(.readMarker(partition: conversation.id, position: newest), in: ownData.id, by: alice, nowMillis: now + 3)
        #expect(try a.views.conversations(reader: alice.id).map(\.unread) == [0])
        #expect(try b.views.conversations(reader: bob.id).map(\.unread) == [0])
    }
}
