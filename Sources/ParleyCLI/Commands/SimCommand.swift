import Discovery
import Foundation
import Simulation

/// `parley sim`: many nodes in one process, in simulated time (docs/LAB.md, *Hundreds of nodes,
/// simulated*): real `Discovery` instances with the overlay, real `GossipSession`s per link and
/// the log's apply rules over in-memory replicas, a simulated network and clock, one seed. The
/// same options give the same `report.json` apart from `wall_seconds`. Exit status 1 when the
/// verdict fails: a write missing somewhere, replicas that differ, a protocol violation or a
/// refused op among honest nodes, or a node over the link bound.
struct SimCommand: Command {
    let name = "sim"
    let summary = "simulate N nodes writing into a room, in one process from one seed: convergence, hops, copies and bytes per op"
    let usage = [
        "sim --nodes N --writes W --seed S --out DIR [--churn FRACTION] [--active-peers K] [--duration SECONDS] [--partition FROM-TO] [--loss P] [--push-tree]"
    ]
    static let nodes = LabRunCommand.integer("nodes", "N", "how many nodes (2-5000)")
    static let writes = LabRunCommand.integer("writes", "W", "posts written into #lobby by random running nodes (default 0)")
    static let seed = Option.value("seed", "S", "seeds everything: identities, start times, latencies, losses, churn, writers, every node's picks (default 1)")
    {
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
    static let pushTree = Flag.flag(
        "push-tree", "push along the broadcast tree (PRUNE, GRAFT, ANNOUNCE) instead of one pusher per chain (parley run --push-tree)")
    static let loss = LabRunCommand.number("loss", "P", "the chance that one beacon misses one node (default 0.01)")
    let options = [
        Self.nodes.spec, Self.writes.spec, Self.seed.spec, Self.out.spec, Self.churn.spec, Self.activePeers.spec, Self.duration.spec,
        Self.partition.spec, Self.loss.spec, Self.pushTree.spec,
    ]
    let details = [
        "Each node runs a real Discovery instance with its overlay (docs/DESIGN.md §4.1.2), a real GossipSession on each link "
            + "(§4.3) and the log's apply rules (§3.3: hash, signature, chain) over an in-memory replica. The simulation carries "
            + "beacons to every node of its half of the network after 1-5 ms (some lost), turns dials into links, carries each "
            + "link's messages in order after 1-5 ms, closes the links of a crashed node and, 45 s into a partition, those across "
            + "it. Nodes start within the first 10 s; writes are spread from then until the last third of the run (at most 60 s) begins; a crashed node keeps "
            + "its replica and is back 20 s later.",
        "report.json: seed, nodes, writes, converged, lost_writes, hops and latency_ms {p50, p95, p99, max} (of every delivery, "
            + "latency in simulated ms), copies_per_op, bytes_per_op, messages_per_op, converge_ms, links_per_node {max, mean}, "
            + "violations, rejected_ops, wall_seconds, and the link graph at the end: connected, running, distance_hops, "
            + "heal_millis, dials, disconnects, crashes, beacons_delivered.",
        "Exit status: 0 when every node holds every write, nothing broke the protocol and no node holds more links than twice "
            + "the active size; 1 when not; 2 for a usage error. A failing seed replays exactly: run the same command again.",
    ]
    let examples = [
        "sim --nodes 200 --writes 2000 --seed 7 --out /tmp/sim200",
        "sim --nodes 100 --writes 1000 --churn 0.1 --seed 3 --out /tmp/sim100",
        "sim --nodes 60 --writes 600 --seed 2 --partition 60-120 --out /tmp/sim60",
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
        configuration.treePush = arguments[Self.pushTree]
        if let seconds = try arguments.value(Self.duration) {
            guard seconds >= 30, seconds <= 86_400 else { throw CLIError.usage("--duration must be from 30 to 86400 seconds, not \(seconds)", command: name) }
            configuration.setDuration(UInt64(seconds * 1_000))
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
        let writes = try arguments.value(Self.writes) ?? 0
        guard (0...1_000_000).contains(writes) else { throw CLIError.usage("--writes must be from 0 to 1000000, not \(writes)", command: name) }
        configuration.writes = writes
        let started = ContinuousClock.now
        var simulation = NetworkSimulation(configuration)
        let report = simulation.run()
        let wall = ContinuousClock.now - started
        let wallSeconds = Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18
        let bound = configuration.overlay?.maxLinks ?? nodes - 1
        let passed = report.holds(linkBound: bound)
        try writeReport(report, wallSeconds: wallSeconds, to: out + "/report.json")
        let output = context.output
        let overlay = report.overlay, delivery = report.delivery
        output.line(passed ? "PASS: " + Self.verdict(report, bound: bound) : "FAIL: " + Self.verdict(report, bound: bound))
        if delivery.writes > 0 {
            output.line(
                String(
                    format: "hops p50/p95/p99 %d/%d/%d, latency p50/p95/p99 %d/%d/%d ms, %.2f copies, %.0f bytes and %.1f messages per op%@",
                    delivery.hops.p50, delivery.hops.p95, delivery.hops.p99, delivery.latencyMillis.p50, delivery.latencyMillis.p95,
                    delivery.latencyMillis.p99, delivery.copiesPerOp, delivery.bytesPerOp, delivery.messagesPerOp,
                    delivery.convergeMillis.map { String(format: ", converged %.1f s after the last write", Double($0) / 1_000) } ?? ""))
        }
        output.line(
            String(
                format: "links per node max %d mean %.1f, distance p50/p95/p99 %d/%d/%d, %@%d dials, %d closed, %d crashes, %.1f s",
                overlay.linksPerNode.max, overlay.linksPerNode.mean, overlay.hops.p50, overlay.hops.p95, overlay.hops.p99,
                overlay.healMillis.map { String(format: "healed %.1f s after the partition, ", Double($0) / 1_000) } ?? "", overlay.dials,
                overlay.disconnects, overlay.crashes, wallSeconds))
        output.line("report: \(out)/report.json")
        return passed ? 0 : 1
    }

    /// The verdict's line: what holds, or the first thing that does not.
    static func verdict(_ report: SimulationReport, bound: Int) -> String {
        let overlay = report.overlay, delivery = report.delivery
        if delivery.violations > 0 { return "\(delivery.violations) links closed for a protocol violation among honest nodes" }
        if delivery.rejectedOps > 0 { return "replicas refused \(delivery.rejectedOps) ops sent by honest nodes" }
        if delivery.unexpectedDirectives > 0 { return "\(delivery.unexpectedDirectives) fork proofs or unknown partitions among honest nodes" }
        if overlay.linksPerNode.max > bound { return "a node holds \(overlay.linksPerNode.max) links, over \(bound)" }
        if !delivery.converged {
            return "\(delivery.lostWrites) of \(delivery.writes) writes are missing on some node"
                + (overlay.connected ? "" : "; the running nodes do not form one graph")
        }
        let graph = "\(overlay.running) nodes, at most \(overlay.linksPerNode.max) links each" + (overlay.connected ? "" : " (not one graph at the end)")
        return delivery.writes > 0 ? "every node holds all \(delivery.writes) writes; \(graph)" : graph
    }

    /// The report as JSON: the delivery's figures at the top, the link graph's beside them (its
    /// distances as `distance_hops`, so `hops` are delivery hops).
    private func writeReport(_ report: SimulationReport, wallSeconds: Double, to path: String) throws {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        do {
            var object = try JSONSerialization.jsonObject(with: try encoder.encode(report.overlay)) as? [String: Any] ?? [:]
            object["distance_hops"] = object.removeValue(forKey: "hops")
            let delivery = try JSONSerialization.jsonObject(with: try encoder.encode(report.delivery)) as? [String: Any] ?? [:]
            object.merge(delivery) { _, new in new }
            object["converge_ms"] = object.removeValue(forKey: "converge_millis")
            object["latency_ms"] = object.removeValue(forKey: "latency_millis")
            object["wall_seconds"] = (wallSeconds * 1_000).rounded() / 1_000
            let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
            try data.write(to: URL(fileURLWithPath: path))
        } catch {
            throw CLIError.failure("cannot write \(path): \(error.localizedDescription)")
        }
    }
}
