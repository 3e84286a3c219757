import Discovery
import Dispatch
import Identity
import Replica
import Synchronization
import TestSupport
import Testing

@testable import Simulation

/// Writes delivered by the real sync protocol among many simulated nodes (`NetworkSimulation`):
/// every node holds every write at the end, no honest node breaks the protocol or sends an op a
/// replica refuses, and the same seed gives the same run. Each run prints its seed; a failure
/// replays with `parley sim` and the options printed.
@Suite struct DeliverySimulationTests {
    /// Runs and prints the `parley sim` command that replays the run.
    func run(_ configuration: SimulationConfiguration) async -> SimulationReport {
        let started = ContinuousClock.now
        let report = await Self.simulate(configuration)
        print("\(Self.replay(configuration)) (\(ContinuousClock.now - started)): \(report.delivery)")
        return report
    }

    /// Runs on a thread of its own, within the process's budget of cores: seconds of computing
    /// on the cooperative pool would starve other suites' tasks.
    static func simulate(_ configuration: SimulationConfiguration) async -> SimulationReport {
        await onThread(cores: 1) {
            var simulation = NetworkSimulation(configuration)
            return simulation.run()
        }
    }

    static func replay(_ configuration: SimulationConfiguration) -> String {
        "parley sim --nodes \(configuration.nodes) --writes \(configuration.writes) --churn \(configuration.churn) "
            + "--seed \(configuration.seed) --duration \(configuration.duration / 1_000)"
            + (configuration.overlay.map { " --active-peers \($0.activeSize)" } ?? " --active-peers 0")
            + (configuration.partition.map { " --partition \($0.lowerBound / 1_000)-\($0.upperBound / 1_000)" } ?? "")
            + (configuration.treePush ? " --push-tree" : "") + " --out /tmp/sim"
    }

    static func configuration(nodes: Int, writes: Int, seconds: UInt64, seed: UInt64) -> SimulationConfiguration {
        var configuration = SimulationConfiguration(nodes: nodes, seed: seed)
        configuration.writes = writes
        configuration.setDuration(seconds * 1_000)
        return configuration
    }

    func expectSound(_ report: SimulationReport, _ configuration: SimulationConfiguration, sourceLocation: SourceLocation = #_sourceLocation) {
        let delivery = report.delivery
        let replay = Self.replay(configuration)
        #expect(delivery.writes == configuration.writes, "every planned write was made: \(replay)", sourceLocation: sourceLocation)
        #expect(delivery.converged && delivery.lostWrites == 0, "every node holds every write: \(delivery); \(replay)", sourceLocation: sourceLocation)
        #expect(
            delivery.violations == 0 && delivery.rejectedOps == 0 && delivery.unexpectedDirectives == 0, "\(delivery); \(replay)",
            sourceLocation: sourceLocation)
        #expect(report.holds(linkBound: configuration.overlay?.maxLinks ?? configuration.nodes - 1), "\(replay)", sourceLocation: sourceLocation)
    }

    @Test func fortyNodes_onTheOverlay_withChurn_deliverEveryWrite_inFewHops_aFewTimesEach() async {
        var configuration = Self.configuration(nodes: 40, writes: 400, seconds: 120, seed: SeededRandom.announce("delivery, 40 nodes"))
        configuration.churn = 0.1
        let report = await run(configuration)
        expectSound(report, configuration)
        #expect(report.delivery.hops.p99 <= 6, "a tree over a random graph of degree 8: \(report.delivery.hops)")
        #expect(report.delivery.copiesPerOp < 3, "each op arrives a few times at most, not once per link: \(report.delivery.copiesPerOp)")
        #expect(report.overlay.crashes == 4)
    }

    @Test func theBroadcastTree_deliversEveryWrite_aboutOnceEach_overLongerPaths() async {
        var configuration = Self.configuration(nodes: 40, writes: 400, seconds: 120, seed: SeededRandom.announce("delivery, tree"))
        configuration.churn = 0.1
        configuration.treePush = true
        let report = await run(configuration)
        expectSound(report, configuration)
        #expect(report.delivery.copiesPerOp <= 1.3, "each op arrives about once: \(report.delivery.copiesPerOp)")
        #expect(report.delivery.hops.p99 <= 16, "the tree is longer than the overlay's distances, not unbounded: \(report.delivery.hops)")
        var chains = configuration
        chains.treePush = false
        let perChain = await Self.simulate(chains)
        #expect(report.delivery.copiesPerOp < perChain.delivery.copiesPerOp, "fewer copies than one pusher per chain: \(perChain.delivery)")
    }

    @Test func theSameSeed_givesTheSameRun() async {
        var configuration = Self.configuration(nodes: 24, writes: 200, seconds: 90, seed: SeededRandom.announce("delivery, twice"))
        configuration.churn = 0.1
        let first = await Self.simulate(configuration)
        #expect(await Self.simulate(configuration) == first)
    }

    @Test func aPartition_writesOnBothSides_convergeOnceItHeals() async {
        var configuration = Self.configuration(nodes: 30, writes: 300, seconds: 180, seed: SeededRandom.announce("delivery, partition"))
        configuration.partition = 30_000..<90_000
        let report = await run(configuration)
        expectSound(report, configuration)
        #expect(report.delivery.convergeMillis != nil)
    }

    @Test func aFullMesh_deliversInOneHopMostly() async {
        var configuration = Self.configuration(nodes: 6, writes: 120, seconds: 60, seed: SeededRandom.announce("delivery, full mesh"))
        configuration.overlay = nil
        let report = await run(configuration)
        expectSound(report, configuration)
        #expect(report.delivery.hops.p50 == 1, "the author pushes to every peer: \(report.delivery.hops)")
    }

    /// Many short runs, each with its own seed, with churn, a partition in half of them and the
    /// broadcast tree in half of them, on every core.
    @Test func manyShortSeeds_allSound() async {
        let base = SeededRandom.announce("delivery, many seeds")
        let seeds = 200
        let failures = Mutex<[String]>([])
        await onThread(cores: ComputeBudget.shared.cores) {
            DispatchQueue.concurrentPerform(iterations: seeds) { offset in
                var configuration = Self.configuration(nodes: 8 + offset % 5, writes: 30, seconds: 45, seed: base &+ UInt64(offset))
                configuration.churn = 0.2
                configuration.overlay = OverlayConfiguration(activeSize: 4)
                configuration.treePush = offset % 4 >= 2
                if offset % 2 == 1 { configuration.partition = 12_000..<24_000 }
                var simulation = NetworkSimulation(configuration)
                let report = simulation.run()
                if !report.holds(linkBound: configuration.overlay!.maxLinks) {
                    let line = "\(Self.replay(configuration)): \(report.delivery)"
                    failures.withLock { $0.append(line) }
                }
            }
        }
        let failed = failures.withLock { $0 }
        #expect(failed.isEmpty, "\(failed.count) of \(seeds) seeds failed:\n\(failed.prefix(5).joined(separator: "\n"))")
    }
}

/// The simulated replica applies the log's envelope and chain rules: it stores no op that does
/// not verify, links to a head it lacks, or skips a seq.
@Suite struct SimulatedReplicaTests {
    @Test func refusesBadSignaturesBrokenChainsAndGaps_storesTheRest() throws {
        let author = try Identity(seed: [UInt8](repeating: 7, count: 32))
        let room = PartitionDescriptor.room(RoomName("lobby")!).id
        func post(_ seq: UInt64, prev: OpID) -> Operation {
            Operation.sign(
                type: .post, partition: room, seq: seq, prev: prev, hlc: HLC(wallMillis: 1_000 + seq, counter: 0),
                body: OperationBody.post(text: "post \(seq)", attachments: [], location: nil, replyTo: nil).encoded, by: author)
        }
        var replica = SimulatedReplica()
        var verified: Set<Operation> = []
        let first = post(1, prev: .zero)
        #expect(replica.apply([first], verified: &verified) == [.rejected(.unknownPartition)])
        replica.hold(room)
        var forged = first.header
        forged[forged.count - 1] ^= 1
        #expect(replica.apply([try Operation(header: forged, body: first.body)], verified: &verified) == [.rejected(.invalid(.badSignature))])
        let second = post(2, prev: first.id)
        #expect(replica.apply([second], verified: &verified) == [.pending(missingFrom: 1)])
        #expect(replica.apply([first, second, first], verified: &verified) == [.applied, .applied, .duplicate])
        #expect(replica.apply([post(3, prev: first.id)], verified: &verified) == [.rejected(.invalid(.brokenChain))])
        #expect(replica.count(room) == 2 && replica.heads(room).map(\.maxSeq) == [2])
        // Verified once for every node, but only that very op: a forged copy of it (same id,
        // another signature or body) is checked anew on another replica.
        var other = SimulatedReplica()
        other.hold(room)
        #expect(verified.contains(first))
        #expect(other.apply([try Operation(header: forged, body: first.body)], verified: &verified) == [.rejected(.invalid(.badSignature))])
        var body = first.body
        body[body.count - 1] ^= 1
        #expect(other.apply([try Operation(header: first.header, body: body)], verified: &verified) == [.rejected(.invalid(.bodyHashMismatch))])
        #expect(other.apply([first], verified: &verified) == [.applied])
    }
}
