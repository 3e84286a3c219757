import Identity
import Replica
import Store
import TestSupport
import Testing
import Wire

/// Seeded property test of DESIGN §3.4: random op sets over several authors and partitions —
/// posts, edits, deletes, reactions, tasks, membership, profiles, read markers, plus
/// rule-breaking and forked ops — delivered to several replicas in random orders, in random
/// batches, with duplicates, end in identical digests and identical views; a rebuild from the
/// log equals the live views. Replay a failure with `PARLEY_SEED=<seed> swift test --filter Convergence`.
@Suite struct ConvergencePropertyTests {
    static let authors: [Identity] = (0..<5).map { Fixtures.identity(UInt8($0)) }

    /// Four shards of 250 cases run in parallel: 1,000 random cases per test run.
    @Test(arguments: 0..<4)
    func randomOpSets_inAnyOrder_convergeToIdenticalReplicas(shard: Int) throws {
        let baseSeed = SeededRandom.seedFromEnvironment()
        for index in 0..<250 {
            let seed = baseSeed &+ UInt64(shard * 250 + index)
            // Stop a shard at its first failing case: one seed is enough to replay.
            guard try runCase(seed: seed) else { return }
        }
    }

    /// Runs one random case; false if it failed (the failure is already recorded).
    func runCase(seed: UInt64) throws -> Bool {
        var random = SeededRandom(seed: seed)
        let scenario = Scenario.generate(authors: Self.authors, random: &random)
        var replicas: [ReplicaStore] = []
        for _ in 0..<3 {
            let store = try Fixtures.store(partitions: scenario.partitions)
            try deliver(scenario.ops, to: store, random: &random)
            replicas.append(store)
        }
        let reference = replicas[0]
        let referenceDigests = try scenario.partitions.map { try reference.digest($0.id) }
        let referenceViews = try reference.viewSnapshot()
        var passed = true
        func check(_ condition: Bool, _ message: @autoclosure () -> String) {
            if !condition {
                Issue.record("seed \(seed): \(message())  (replay: PARLEY_SEED=\(seed) swift test --filter Convergence)")
                passed = false
            }
        }
        for (i, replica) in replicas.enumerated().dropFirst() {
            let digests = try scenario.partitions.map { try replica.digest($0.id) }
            check(digests == referenceDigests, "replica \(i) digests differ from replica 0")
            let views = try replica.viewSnapshot()
            check(views == referenceViews, "replica \(i) views differ: \(Set(views).symmetricDifference(referenceViews).sorted().prefix(2))")
        }
        // Rule-breaking ops never take effect anywhere.
        for op in scenario.forbidden {
            check(try !reference.contains(op), "a rule-breaking op was stored: \(op.id)")
        }
        try reference.rebuildViews()
        let rebuilt = try reference.viewSnapshot()
        check(
            rebuilt == referenceViews,
            "a rebuild from the log differs from the live views: \(Set(rebuilt).symmetricDifference(referenceViews).sorted().prefix(2))")
        return passed
    }

    /// Delivers every op (some twice) in a random order, one by one or in random batches, and
    /// redelivers until nothing changes — what anti-entropy does between real nodes.
    func deliver(_ ops: [Operation], to store: ReplicaStore, random: inout SeededRandom) throws {
        var queue = ops + ops.filter { _ in random.chance(0.2) }
        var pass = 0
        while true {
            queue.shuffle(using: &random)
            var progress = false
            var index = 0
            while index < queue.count {
                let batchSize = random.chance(0.3) ? Int.random(in: 2...8, using: &random) : 1
                let batch = Array(queue[index..<min(index + batchSize, queue.count)])
                let outcomes = batch.count == 1 ? [try store.apply(batch[0], nowMillis: Fixtures.now())] : try store.apply(batch, nowMillis: Fixtures.now())
                for outcome in outcomes {
                    switch outcome {
                    case .applied, .forkDetected: progress = true
                    default: break
                    }
                }
                index += batchSize
            }
            pass += 1
            if !progress || pass > 200 { break }
            // Keep the chain order likely on later passes, as WANT-driven sync would.
            queue.sort { ($0.seq, $0.hlc) < ($1.seq, $1.hlc) }
            if random.chance(0.5) { queue.shuffle(using: &random) }
        }
    }
}

/// One random world: partitions, the ops honest and dishonest authors wrote, and which of them
/// break a rule (and so must never be stored).
struct Scenario {
    var partitions: [PartitionDescriptor] = []
    var ops: [Operation] = []
    var forbidden: [Operation] = []

    static func generate(authors: [Identity], random: inout SeededRandom) -> Scenario {
        var scenario = Scenario()
        var factory = OpFactory()
        let creator = authors[0]
        let room = PartitionDescriptor.room(RoomName("lobby")!)
        let room2 = PartitionDescriptor.room(RoomName("dev")!)
        let conversation = PartitionDescriptor.conversation(creator: creator.id, nonce: Bytes32(w0: random.next(), w1: 1, w2: 2, w3: 3))
        let ownData = PartitionDescriptor.ownData(owner: authors[1].id)
        scenario.partitions = [room, room2, .directory, conversation, ownData]

        var posts: [PartitionID: [(OpID, UserID, UInt64)]] = [:]
        var tasks: [PartitionID: [OpID]] = [:]
        var members: Set<UserID> = [creator.id]
        var outsiders = Set(authors.map(\.id))
        let initial = authors[1...].filter { _ in random.chance(0.4) }.map(\.id)
        members.formUnion(initial)
        outsiders.subtract(members)
        scenario.ops.append(factory.make(.conversationCreate(name: "team", members: initial), in: conversation.id, by: creator))

        let steps = Int.random(in: 8...36, using: &random)
        for _ in 0..<steps {
            let author = authors.prefix(4).randomElement(using: &random)!
            var partition = [room, room2, room, conversation].randomElement(using: &random)!
            if partition == conversation && !members.contains(author.id) && !random.chance(0.3) { partition = room }
            let p = partition.id
            var body: OperationBody
            switch Int.random(in: 0..<14, using: &random) {
            case 0...3:
                body = .post(
                    text: "m\(random.next() % 1000)", attachments: [], location: random.chance(0.1) ? Location(latitude: 1.5, longitude: 2.5) : nil,
                    replyTo: nil)
            case 4:
                guard let own = posts[p]?.filter({ $0.1 == author.id }).randomElement(using: &random) else { continue }
                body = .edit(target: own.0, targetSeq: own.2, text: "edited \(random.next() % 100)")
            case 5:
                guard let own = posts[p]?.filter({ $0.1 == author.id }).randomElement(using: &random) else { continue }
                body = .delete(target: own.0, targetSeq: own.2)
            case 6:
                guard let any = posts[p]?.randomElement(using: &random) else { continue }
                body = .react(target: any.0, emoji: ["👍", "🎉", "❤️"].randomElement(using: &random)!, on: random.chance(0.7))
            case 7:
                body = .taskCreate(title: "t\(random.next() % 100)", owner: random.chance(0.3) ? authors.randomElement(using: &random)!.id : nil)
            case 8:
                guard let task = tasks[p]?.randomElement(using: &random) else { continue }
                body = .taskUpdate(
                    target: task, title: random.chance(0.3) ? "renamed" : nil, status: TaskStatus.allCases.randomElement(using: &random),
                    owner: random.chance(0.3) ? .set(authors.randomElement(using: &random)!.id) : (random.chance(0.2) ? .cleared : .unchanged))
            case 9:
                guard let task = tasks[p]?.randomElement(using: &random) else { continue }
                body = random.chance(0.3) ? .taskDelete(target: task) : .taskUpdate(target: task, title: nil, status: .complete, owner: .unchanged)
            case 10:
                let profile = OperationBody.profile(
                    subject: author.id, nick: "n\(random.next() % 50)", displayName: random.chance(0.5) ? "D" : nil,
                    status: random.chance(0.3) ? "busy" : nil, presence: random.chance(0.3) ? .away : nil, avatar: nil)
                scenario.ops.append(factory.make(profile, in: PartitionDescriptor.directory.id, by: author))
                continue
            case 11:
                // Membership: the creator or a member adds someone; the creator sometimes removes; members leave.
                guard members.contains(author.id) else { continue }
                let target = authors.randomElement(using: &random)!.id
                if author.id == creator.id && random.chance(0.3) {
                    body = .memberRemove(target)
                } else if random.chance(0.15) {
                    body = .memberLeave
                } else {
                    body = .memberAdd(target)
                    members.insert(target)
                    outsiders.remove(target)
                }
                partition = conversation
            case 12:
                if author.id == authors[1].id {
                    body = .readMarker(partition: room.id, position: HLC(raw: random.next() >> 8))
                    scenario.ops.append(factory.make(body, in: ownData.id, by: author))
                }
                continue
            default:
                scenario.addRuleBreaker(
                    authors: authors, author: author, posts: posts, partitions: (room, conversation, ownData),
                    outsiders: outsiders, factory: &factory, random: &random)
                continue
            }
            let op = factory.make(body, in: partition.id, by: author, hlcOffset: Int64.random(in: -3...3, using: &random))
            scenario.ops.append(op)
            if case .post = body { posts[partition.id, default: []].append((op.id, author.id, op.seq)) }
            if case .taskCreate = body { tasks[partition.id, default: []].append(op.id) }
        }
        // Sometimes an author forks: signs a second, different op at a seq it already used.
        if random.chance(0.25), let victim = scenario.ops.filter({ op in !scenario.forbidden.contains { $0.id == op.id } }).randomElement(using: &random) {
            let author = authors.first { $0.id == victim.author }!
            let twin = factory.make(
                .post(text: "fork \(random.next() % 100)", attachments: [], location: nil, replyTo: nil),
                in: victim.partition, by: author, seq: victim.seq, prev: victim.prev)
            let partitionKind = scenario.partitions.first { $0.id == victim.partition }!.kind
            if PartitionRules.allows(.post, in: partitionKind) {
                scenario.ops.append(twin)
                // The forked branch continues.
                factory.setHead(victim.partition, author.id, seq: twin.seq, id: twin.id)
                if random.chance(0.5) {
                    scenario.ops.append(factory.make(.post(text: "after fork", attachments: [], location: nil, replyTo: nil), in: victim.partition, by: author))
                }
            }
        }
        return scenario
    }

    /// An op that breaks a rule and so must be refused by every replica: a profile written for
    /// someone else, an edit of someone else's message, a post by someone never added to the
    /// conversation, or a write into another user's `self` partition. Signed on a throwaway
    /// chain position so it cannot block the author's honest ops.
    mutating func addRuleBreaker(
        authors: [Identity], author: Identity, posts: [PartitionID: [(OpID, UserID, UInt64)]],
        partitions: (room: PartitionDescriptor, conversation: PartitionDescriptor, ownData: PartitionDescriptor),
        outsiders: Set<UserID>, factory: inout OpFactory, random: inout SeededRandom
    ) {
        // A dedicated rule breaker (authors[4]) writes only forbidden ops, so its chain never matters.
        let breaker = authors[4]
        let op: Operation
        switch Int.random(in: 0..<3, using: &random) {
        case 0:
            op = factory.make(
                .profile(subject: authors[0].id, nick: "impostor", displayName: nil, status: nil, presence: nil, avatar: nil),
                in: PartitionDescriptor.directory.id, by: breaker, seq: 1, prev: .zero)
        case 1:
            guard let other = posts[partitions.room.id]?.first(where: { $0.1 != breaker.id }) else { return }
            op = factory.make(.edit(target: other.0, targetSeq: other.2, text: "hijacked"), in: partitions.room.id, by: breaker, seq: 1, prev: .zero)
        default:
            op = factory.make(.readMarker(partition: partitions.room.id, position: HLC(raw: 1)), in: partitions.ownData.id, by: breaker, seq: 1, prev: .zero)
        }
        ops.append(op)
        forbidden.append(op)
    }
}
