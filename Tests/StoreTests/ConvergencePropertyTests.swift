import Identity
import Replica
import Sodium
import TestSupport
import Testing
import Wire

@testable import Store

/// Seeded property test of docs/DESIGN.md §3.4: random op sets over several authors and partitions —
/// posts, edits, deletes, reactions, tasks, profiles, read markers, an end-to-end encrypted
/// conversation with adds, removes, leaves, rotations and shares, plus rule-breaking and forked
/// ops — delivered to several replicas in random orders, in random batches, with duplicates,
/// end in identical digests everywhere; members with the same keys get identical views, and a
/// carrier (a replica whose identity is no member) gets the same views outside the
/// conversation and nothing readable inside it; a rebuild from the log equals the live views.
/// Replay a failure with `PARLEY_SEED=<seed> swift test --filter Convergence`.
@Suite struct ConvergencePropertyTests {
    static let authors: [Identity] = (0..<5).map { Fixtures.identity(UInt8($0)) }

    /// Four shards of 250 cases run in parallel: 1,000 random cases per test run.
    @Test(arguments: 0..<4)
    func randomOpSets_inAnyOrder_convergeToIdenticalReplicas(shard: Int) async throws {
        let baseSeed = SeededRandom.seedFromEnvironment()
        // Seconds of CPU-bound work run on a thread of their own, within the process's budget of
        // cores: on the cooperative pool they would starve the async tests beside them.
        let outcome = await onThread(cores: 1) { () throws -> (readable: Int, failures: [String]) in
            var readable = 0
            for index in 0..<250 {
                let seed = baseSeed &+ UInt64(shard * 250 + index)
                let result = try runCase(seed: seed)
                // Stop a shard at its first failing case: one seed is enough to replay.
                if !result.failures.isEmpty { return (readable, result.failures) }
                if result.readConversation { readable += 1 }
            }
            return (readable, [])
        }
        let (readable, failures) = try outcome.get()
        for failure in failures { Issue.record("\(failure)") }
        guard failures.isEmpty else { return }
        // The generator must exercise the encrypted conversation, not just refuse it.
        #expect(readable > 100, "only \(readable) of 250 cases had a conversation message the members could read")
    }

    /// Runs one random case: what it found wrong, and whether the members read a conversation
    /// message.
    func runCase(seed: UInt64) throws -> (failures: [String], readConversation: Bool) {
        var random = SeededRandom(seed: seed)
        let scenario = Scenario.generate(authors: Self.authors, random: &random)
        // Two replicas of the creator (same keys) and a carrier whose identity is no member.
        var replicas: [ReplicaStore] = []
        for identity in [Self.authors[0], Self.authors[0], Fixtures.identity(9)] {
            let store = try Fixtures.store(partitions: scenario.partitions)
            try store.useIdentity(identity)
            try deliver(scenario.ops, to: store, random: &random)
            replicas.append(store)
        }
        let (reference, twin, carrier) = (replicas[0], replicas[1], replicas[2])
        let referenceDigests = try scenario.partitions.map { try reference.log.digest($0.id) }
        let referenceViews = try reference.views.viewSnapshot()
        var failures: [String] = []
        func check(_ condition: Bool, _ message: @autoclosure () -> String) {
            if !condition {
                failures.append("seed \(seed): \(message())  (replay: PARLEY_SEED=\(seed) swift test --filter Convergence)")
            }
        }
        for (i, replica) in replicas.enumerated() {
            // The count `parley status` shows is read from the heads: forks and their truncations must keep it exact.
            check(try replica.log.opCount() == replica.log.countedOpRows(), "replica \(i): the heads' count differs from the ops' rows")
        }
        for (i, replica) in replicas.enumerated().dropFirst() {
            let digests = try scenario.partitions.map { try replica.log.digest($0.id) }
            check(digests == referenceDigests, "replica \(i) digests differ from replica 0")
        }
        let twinViews = try twin.views.viewSnapshot()
        check(twinViews == referenceViews, "member views differ: \(Set(twinViews).symmetricDifference(referenceViews).sorted().prefix(2))")
        // The carrier: the same views outside the conversation's content, nothing readable in it.
        let conversation = Sodium.hex(scenario.conversation.id.bytes)
        let content = ["\"message\"", "\"reaction\"", "\"task\"", "\"conversation\""]
        func isContent(_ line: String) -> Bool { line.contains(conversation) && content.contains { line.hasPrefix($0) } }
        let carrierViews = try carrier.views.viewSnapshot()
        check(
            carrierViews.filter { !isContent($0) } == referenceViews.filter { !isContent($0) },
            "carrier views differ outside the conversation's content")
        check(
            !carrierViews.contains { isContent($0) && !$0.hasPrefix("\"conversation\"") },
            "the carrier reads conversation content: \(carrierViews.filter(isContent).prefix(2))")
        check(try carrier.views.history(scenario.conversation.id).isEmpty, "the carrier shows a conversation message")
        // Rule-breaking ops never take effect anywhere.
        for op in scenario.forbidden {
            check(try !reference.log.contains(op), "a rule-breaking op was stored: \(op.id)")
        }
        try reference.views.rebuildViews()
        let rebuilt = try reference.views.viewSnapshot()
        check(
            rebuilt == referenceViews,
            "a rebuild from the log differs from the live views: \(Set(rebuilt).symmetricDifference(referenceViews).sorted().prefix(2))")
        return (failures, try !reference.views.history(scenario.conversation.id).isEmpty)
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
