import Discovery
import Simulation
import TestSupport
import Testing

/// The overlay at a scale no test machine runs as processes: real `Discovery` instances in one
/// process, simulated time (`NetworkSimulation`, without writes). Each run prints its seed and report; a
/// failure replays with that seed.
@Suite struct OverlaySimulationTests {
    func run(_ configure: (inout SimulationConfiguration) -> Void) async -> OverlayReport {
        var configuration = SimulationConfiguration(nodes: 64, seed: SeededRandom.announce("overlay simulation"))
        configure(&configuration)
        let started = ContinuousClock.now
        let report = await DeliverySimulationTests.simulate(configuration).overlay
        print("report (\(ContinuousClock.now - started)): \(report)")
        return report
    }

    @Test func sixtyFourNodes_formOneGraph_withBoundedLinks_andFewHops() async {
        let report = await run { $0.duration = 90_000 }
        #expect(report.connected)
        #expect(report.linksPerNode.max <= 16, "links per node stay within maxLinks")
        #expect(report.linksPerNode.mean >= 8 && report.linksPerNode.mean <= 13, "about the active size: \(report.linksPerNode.mean)")
        #expect(report.hops.p99 <= 3, "a random graph of degree 8 has a small diameter: \(report.hops)")
    }

    @Test func theSameSeed_givesTheSameRun() async {
        let seed = SeededRandom.announce("overlay simulation, twice")
        var configuration = SimulationConfiguration(nodes: 30, seed: seed)
        configuration.duration = 100_000
        configuration.settle = 20_000
        configuration.churn = 0.1
        let first = await DeliverySimulationTests.simulate(configuration)
        #expect(await DeliverySimulationTests.simulate(configuration) == first)
    }

    @Test func aFewNodes_stayAFullMesh() async {
        let report = await run {
            $0.nodes = 7
            $0.duration = 60_000
        }
        #expect(report.linksPerNode.max == 6 && report.linksPerNode.mean == 6, "every node linked to every other: \(report.linksPerNode)")
    }

    @Test func aPartitionThatEnds_isHealedByTheRotations_andChurnLeavesItConnected() async {
        let report = await run {
            $0.nodes = 40
            $0.duration = 240_000
            $0.partition = 40_000..<100_000
            $0.churn = 0.1
        }
        #expect(report.connected, "one graph again")
        let heal = report.healMillis
        #expect(heal != nil && heal! <= 60_000, "a link across within two rotation intervals: \(String(describing: heal))")
        #expect(report.linksPerNode.max <= 16)
        #expect(report.crashes == 4)
    }
}
