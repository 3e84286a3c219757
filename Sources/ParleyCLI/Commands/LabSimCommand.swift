import Discovery
import Foundation
import Simulation

/// `parley lab sim`: the overlay of many nodes in one process, in simulated time (issue 37,
/// step 1; `OverlaySimulation`, docs/DESIGN.md §8). Real `Discovery` instances, a simulated
/// network and clock, one seed: the same options give the same `report.json` apart from
/// `wall_seconds`. Exit status 1 when the running nodes do not form one graph or a node holds more
/// links than the bound allows.
struct LabSimCommand: Command {
    let name = "lab sim"
    let summary = "simulate N nodes' discovery and overlay in one process, from one seed: links per node, hops, healing"
    let usage = [
        "lab sim --nodes N --seed S --out DIR [--active-peers K] [--duration SECONDS] [--churn FRACTION] [--partition FROM-TO] [--loss P]"
    ]
    static let nodes = LabRunCommand.integer("nodes", "N", "how many nodes (2-5000)")
    static let seed = Option.value("seed", "S", "seeds everything: start times, latencies, losses, churn, every node's picks (default 1)") {
        text, command throws(CLIError) in
        guard let seed = UInt64(text) else { throw CLIError.usage("--seed must be a whole number from 0 to 2^64-1, not '\(text)'", command: command) }
        return seed
    }
    static let out = Option.value("out", "DIR", "where report.json goes (required)")
    static let activePeers = LabRunCommand.integer("active-peers", "K", "the overlay's active size, 2-64 (default 8); 0: the full mesh")
    static let duration = LabRunCommand.number("duration", "SECONDS", "simulated seconds (default 300)")
    static let churn = LabRunCommand.number("churn", "FRACTION", "the fraction of nodes that crash once and restart 20 s later (default 0)")
    static let partition = Option.value("partition", "FROM-TO", "split the network in two halves from FROM to TO seconds") {
        text, command throws(CLIError) in
        let parts = text.split(separator: "-").compactMap { Double($0) }
        guard parts.count == 2, parts[0] >= 0, parts[1] > parts[0] else {
            throw CLIError.usage("--partition must be FROM-TO in seconds with FROM < TO (60-120), not '\(text)'", command: command)
        }
        return UInt64(parts[0] * 1_000)..<UInt64(parts[1] * 1_000)
    }
    static let loss = LabRunCommand.number("loss", "P", "the chance that one beacon misses one node (default 0.01)")
    let options = [
        Self.nodes.spec, Self.seed.spec, Self.out.spec, Self.activePeers.spec, Self.duration.spec, Self.churn.spec, Self.partition.spec,
        Self.loss.spec,
    ]
    let details = [
        "Each node is a real Discovery instance with its overlay (docs/DESIGN.md §4.1.2); the simulation carries its beacons to "
            + "every node of its half of the network after 1-5 ms (some lost), turns dials into links, closes the links of a "
            + "crashed node and, 45 s into a partition, those across it. Nodes start within the first 10 s.",
        "report.json: seed, nodes, running, connected, links_per_node {max, mean}, hops {p50, p95, p99, max} (from 32 random "
            + "nodes to every node they reach), heal_millis (from the end of the partition to the first link across it), dials, "
            + "disconnects, crashes, beacons_delivered, wall_seconds. Writes and their delivery come with the broadcast tree.",
        "Exit status: 0 when the running nodes form one graph within the link bound, 1 when not, 2 for a usage error. "
            + "A failing seed replays exactly: run the same command again.",
    ]
    let examples = [
        "lab sim --nodes 200 --seed 7 --out /tmp/sim200",
        "lab sim --nodes 500 --seed 3 --churn 0.1 --partition 60-120 --out /tmp/sim500",
    ]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        let out = LabRunCommand().absolute(try arguments.required(Self.out))
        let nodes = try arguments.required(Self.nodes)
        guard (2...5_000).contains(nodes) else { throw CLIError.usage("--nodes must be from 2 to 5000, not \(nodes)", command: name) }
        var configuration = SimulationConfiguration(nodes: nodes, seed: try arguments.value(Self.seed) ?? 1)
        let active = try arguments.value(Self.activePeers) ?? 8
        guard active == 0 || (2...64).contains(active) else {
            throw CLIError.usage("--active-peers must be 0 (the full mesh) or from 2 to 64, not \(active)", command: name)
        }
        configuration.overlay = active == 0 ? nil : OverlayConfiguration(activeSize: active)
        if let seconds = try arguments.value(Self.duration) {
            guard seconds >= 30, seconds <= 86_400 else { throw CLIError.usage("--duration must be from 30 to 86400 seconds, not \(seconds)", command: name) }
            configuration.duration = UInt64(seconds * 1_000)
        }
        if let churn = try arguments.value(Self.churn) {
            guard (0...1).contains(churn) else { throw CLIError.usage("--churn must be a fraction from 0 to 1, not \(churn)", command: name) }
            configuration.churn = churn
        }
        if let loss = try arguments.value(Self.loss) {
            guard (0..<1).contains(loss) else { throw CLIError.usage("--loss must be a chance from 0 to below 1, not \(loss)", command: name) }
            configuration.beaconLoss = loss
        }
        if let partition = try arguments.value(Self.partition) {
            guard partition.upperBound < configuration.duration else {
                throw CLIError.usage("--partition must end before --duration (\(configuration.duration / 1_000) s)", command: name)
            }
            configuration.partition = partition
        }
        do {
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        } catch {
            throw CLIError.failure("cannot create \(out): \(error.localizedDescription)")
        }
        let started = ContinuousClock.now
        var simulation = OverlaySimulation(configuration)
        let report = simulation.run()
        let wall = ContinuousClock.now - started
        let wallSeconds = Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18
        let bound = configuration.overlay?.maxLinks ?? nodes - 1
        let passed = report.connected && report.linksPerNode.max <= bound
        try writeReport(report, wallSeconds: wallSeconds, to: out + "/report.json")
        let output = context.output
        output.line(
            passed
                ? "PASS: \(report.running) nodes form one graph, at most \(report.linksPerNode.max) links each"
                : "FAIL: " + (report.connected ? "a node holds \(report.linksPerNode.max) links, over \(bound)" : "the nodes do not form one graph"))
        output.line(
            String(
                format: "links per node max %d mean %.1f, hops p50/p95/p99 %d/%d/%d, %@%d dials, %d closed, %d crashes, %.1f s",
                report.linksPerNode.max, report.linksPerNode.mean, report.hops.p50, report.hops.p95, report.hops.p99,
                report.healMillis.map { String(format: "healed %.1f s after the partition, ", Double($0) / 1_000) } ?? "", report.dials,
                report.disconnects, report.crashes, wallSeconds))
        output.line("report: \(out)/report.json")
        return passed ? 0 : 1
    }

    private func writeReport(_ report: OverlayReport, wallSeconds: Double, to path: String) throws {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        do {
            var object = try JSONSerialization.jsonObject(with: try encoder.encode(report)) as? [String: Any] ?? [:]
            object["wall_seconds"] = (wallSeconds * 1_000).rounded() / 1_000
            let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
            try data.write(to: URL(fileURLWithPath: path))
        } catch {
            throw CLIError.failure("cannot write \(path): \(error.localizedDescription)")
        }
    }
}
