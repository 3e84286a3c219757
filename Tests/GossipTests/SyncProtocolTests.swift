import Gossip
import Identity
import Replica
import Store
import TestSupport
import Testing
import Wire

/// Two real stores synced through two sessions over an in-memory link (docs/DESIGN.md §4.3): the cost
/// in sync, exactly k ops when behind by k, convergence both ways, live push.
@Suite struct SyncProtocolTests {
    let authors = (20..<30).map { Fixtures.identity(UInt8($0)) }

    @Test func inSync_on10000Ops_exchangesOnlySummaries() throws {
        var factory = OpFactory()
        let ops = makeOps(&factory, in: lobby, authors: authors, perAuthor: 1_000)
        let storeA = try Fixtures.store(partitions: [lobby])
        let storeB = try Fixtures.store(partitions: [lobby])
        try load(storeA, ops)
        try load(storeB, ops)
        let link = makeLink(storeA, storeB)
        try link.connect()

        let opBytes = ops.reduce(0) { $0 + $1.encoded.count }
        for node in [link.a, link.b] {
            #expect(node.sent.map(\.type) == [.summary])
            #expect(node.bytesSent < 300, "\(node.name) sent \(node.bytesSent) bytes")
            #expect(node.closedWith == nil)
        }
        #expect(link.a.bytesSent + link.b.bytesSent < opBytes / 1_000)
        #expect(try storeA.log.digest(lobby.id) == storeB.log.digest(lobby.id))
    }

    @Test func behindByK_receivesExactlyKOps_andEndsWithEqualDigests() throws {
        var factory = OpFactory()
        let ops = makeOps(&factory, in: lobby, authors: authors, perAuthor: 60)
        // B lacks the last 25 rounds of every author, and 600 more of one author's ops beyond them.
        let extra = (0..<600).map { factory.make(post("more \($0)"), in: lobby.id, by: authors[0]) }
        let storeA = try Fixtures.store(partitions: [lobby])
        let storeB = try Fixtures.store(partitions: [lobby])
        try load(storeA, ops + extra)
        try load(storeB, Array(ops.prefix(35 * authors.count)))
        let k = 25 * authors.count + extra.count
        let link = makeLink(storeA, storeB)
        try link.connect()

        #expect(link.a.opsSentInBatches == k)
        #expect(link.b.opsSentInBatches == 0)
        #expect(link.b.appliedOps == k)
        #expect(link.b.progress == (k, k))
        // The vector round shows everything missing at once, so progress reads "0 / k" from the start.
        #expect(link.b.progressReports.first.map { $0.fetched == 0 && $0.wanted == k } == true, "\(link.b.progressReports.prefix(3))")
        #expect(link.b.progressReports.allSatisfy { $0.wanted == k })
        #expect(link.b.session.statistics.opsReceived == k)
        #expect(link.a.session.statistics.opsSent == k)
        #expect(link.a.sentCount(.newOp) == 0 && link.b.sentCount(.newOp) == 0)
        #expect(try storeA.log.digest(lobby.id) == storeB.log.digest(lobby.id))
        #expect(try storeB.views.viewSnapshot() == storeA.views.viewSnapshot())
        // 600 ops of one author take three WANTs of at most 256.
        let wants = link.b.sent.compactMap { message -> UInt16? in
            if case .want(_, let author, _, let count) = message, author == authors[0].id { count } else { nil }
        }
        #expect(wants == [256, 256, 113])
        #expect(link.a.closedWith == nil && link.b.closedWith == nil)
    }

    @Test func bothSidesAhead_converge() throws {
        var factory = OpFactory()
        let common = makeOps(&factory, in: lobby, authors: authors, perAuthor: 5)
        let onlyA = makeOps(&factory, in: lobby, authors: Array(authors[0..<4]), perAuthor: 7)
        let onlyB = makeOps(&factory, in: lobby, authors: Array(authors[4..<10]), perAuthor: 3)
        let directoryOps = [
            factory.make(
                .profile(subject: authors[1].id, nick: "bo", displayName: nil, status: nil, presence: nil, avatar: nil),
                in: PartitionDescriptor.directory.id, by: authors[1])
        ]
        let storeA = try Fixtures.store(partitions: [lobby])
        let storeB = try Fixtures.store(partitions: [lobby])
        try load(storeA, common + onlyA)
        try load(storeB, common + onlyB + directoryOps)
        let link = makeLink(storeA, storeB)
        try link.connect()

        #expect(link.a.opsSentInBatches == onlyA.count)
        #expect(link.b.opsSentInBatches == onlyB.count + directoryOps.count)
        for partition in [lobby.id, PartitionDescriptor.directory.id] {
            #expect(try storeA.log.digest(partition) == storeB.log.digest(partition))
        }
        #expect(try storeA.views.viewSnapshot() == storeB.views.viewSnapshot())
    }

    @Test func partitionHeldByOneSide_isLearnedWhenPolicyAllows_andRoomsAreNot() throws {
        let alice = Fixtures.identity(10)
        let bob = Fixtures.identity(11)
        let conversation = PartitionDescriptor.conversation(creator: alice.id, nonce: Bytes32(w0: 9, w1: 9, w2: 9, w3: 9))
        let storeA = try Fixtures.store(partitions: [lobby, kitchen, conversation])
        let storeB = try Fixtures.store(partitions: [lobby])
        try storeB.useIdentity(bob)  // B reads the conversation with bob's key (docs/DESIGN.md §3.5)
        try storeA.author(.conversationCreate(name: "plans", members: [alice.id, bob.id]), in: conversation.id, by: alice, nowMillis: Fixtures.now())
        try storeA.author(post("secret plans"), in: conversation.id, by: alice, nowMillis: Fixtures.now())
        try storeA.author(post("soup"), in: kitchen.id, by: alice, nowMillis: Fixtures.now())
        let link = makeLink(storeA, storeB, identities: (alice, bob))
        link.a.policy.conversationMembers = [conversation.id: [alice.id, bob.id]]
        link.b.policy.conversationMembers = [conversation.id: [alice.id, bob.id]]
        try link.connect()

        // B learns the conversation (it is a member) and its own inbox (with the invite to it),
        // and fetches them; the kitchen is never named.
        #expect(Set(link.b.learned) == [conversation, .inbox(owner: bob.id)])
        #expect(try storeB.views.history(conversation.id).map(\.text) == ["secret plans"])
        #expect(try storeA.log.digest(conversation.id) == storeB.log.digest(conversation.id))
        #expect(try storeB.log.partition(kitchen.id) == nil)
        let entries = link.a.sent.flatMap { message -> [SummaryEntry] in if case .summary(_, let entries) = message { entries } else { [] } }
        #expect(entries.first { $0.partition == kitchen.id }?.descriptor == nil)
        #expect(link.a.closedWith == nil && link.b.closedWith == nil)
    }

    // MARK: - Live push

    @Test func newLocalOp_isPushedOnce_andAppliedByThePeer() throws {
        let (link, storeA, storeB) = try syncedPair()
        let op = try link.a.author("live", in: lobby)
        try link.settle()

        #expect(link.a.sent.filter { $0 == .newOp(op) }.count == 1)
        #expect(try storeB.log.contains(op))
        #expect(try storeA.log.digest(lobby.id) == storeB.log.digest(lobby.id))
        // B accepted it and told its session, which knows A has it: nothing goes back.
        #expect(link.b.sentCount(.newOp) == 0)
        #expect(link.b.sentCount(.want) == 0 && link.a.opsSentInBatches == 0)

        // A run of posts streams as pushes, in order.
        for index in 0..<5 { try link.a.author("more \(index)", in: lobby) }
        try link.settle()
        #expect(link.a.sentCount(.newOp) == 6)
        #expect(try storeA.log.digest(lobby.id) == storeB.log.digest(lobby.id))
    }

    @Test func newLocalOp_thePeerAlreadyHas_isNotPushed() throws {
        let (link, _, storeB) = try syncedPair()
        // B writes; A receives it by push, applies it and reports it to its own session.
        let op = try link.b.author("from b", in: lobby)
        try link.settle()
        #expect(link.b.sentCount(.newOp) == 1)
        #expect(link.a.sentCount(.newOp) == 0)
        // Reporting it again (as another link's shell would) still sends nothing.
        let directives = link.a.session.onNewLocalOp(op, now: link.a.now)
        #expect(messages(directives).isEmpty)
        #expect(try storeB.log.contains(op))
    }

    @Test func missedPush_isRepairedByAntiEntropy() throws {
        let (link, storeA, storeB) = try syncedPair()
        // A writes while the frame to B is lost.
        try link.a.author("lost", in: lobby)
        #expect(link.a.outgoing.count == 1)
        link.a.outgoing.removeAll()
        try link.a.author("after the loss", in: lobby)
        try link.settle()
        // The second push arrives ahead of the chain: B keeps it and asks for the gap.
        #expect(try storeA.log.digest(lobby.id) == storeB.log.digest(lobby.id))
        #expect(link.a.opsSentInBatches == 1)

        // A push lost for good: the next anti-entropy round repairs it.
        try link.a.author("lost too", in: lobby)
        link.a.outgoing.removeAll()
        #expect(try storeA.log.digest(lobby.id) != storeB.log.digest(lobby.id))
        for node in [link.a, link.b] {
            node.now += 30_000
            try node.run(node.session.onTick(now: node.now))
        }
        try link.settle()
        #expect(try storeA.log.digest(lobby.id) == storeB.log.digest(lobby.id))
        #expect(link.a.closedWith == nil && link.b.closedWith == nil)
    }

    @Test func antiEntropy_inSync_sendsNoSummary() throws {
        let (link, _, _) = try syncedPair()
        let before = (link.a.sent.count, link.b.sent.count)
        for node in [link.a, link.b] {
            node.now += 30_000
            try node.run(node.session.onTick(now: node.now))
        }
        try link.settle()
        // Nothing at all: keepalive is the link's business.
        #expect(link.a.sent.count == before.0)
        #expect(link.b.sent.count == before.1)
    }

    /// Two nodes with the same 20 ops in the lobby, linked and settled.
    func syncedPair() throws -> (TestLink, ReplicaStore, ReplicaStore) {
        var factory = OpFactory()
        let ops = makeOps(&factory, in: lobby, authors: Array(authors[0..<4]), perAuthor: 5)
        let storeA = try Fixtures.store(partitions: [lobby])
        let storeB = try Fixtures.store(partitions: [lobby])
        try load(storeA, ops)
        try load(storeB, ops)
        let link = makeLink(storeA, storeB)
        try link.connect()
        return (link, storeA, storeB)
    }
}
