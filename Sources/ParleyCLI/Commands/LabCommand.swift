import Foundation
import Lab

/// `parley lab run`: the convergence lab (issue 5). Starts N real `parley run` processes, drives a
/// seeded workload through their control sockets, injects faults, waits for the cluster to
/// settle, and writes `report.json` and `report.html`. Exit status 1 when the cluster did not
/// converge or lost an acknowledged write.
struct LabRunCommand: Command {
    let name = "lab run"
    let summary = "convergence lab: run N nodes with a workload and faults, check they converge, report numbers"
    let usage = [
        "lab run --nodes N --duration SECONDS --rate MSGS_PER_S --seed N --out DIR [--faults SPEC] [--rooms R] "
            + "[--conversations C] [--devices D] [--netns]"
    ]
    static let nodes = integer("nodes", "N", "how many nodes (1-64, default 4)")
    static let duration = number("duration", "SECONDS", "how long the workload runs (default 20)")
    static let rate = number("rate", "MSGS_PER_S", "writes per second over the whole cluster (default 10)")
    static let seed = Option.value("seed", "N", "seeds the workload, the nodes faults hit and random faults (default 1)") { text, command throws(CLIError) in
        guard let seed = UInt64(text) else { throw CLIError.usage("--seed must be a whole number from 0 to 2^64-1, not '\(text)'", command: command) }
        return seed
    }
    static let out = Option.value("out", "DIR", "where report.json, report.html and the node logs go (required; must not hold another run)")
    static let faults = Option.value("faults", "SPEC", "the fault schedule (default: a kill, a split and a clock skew; see below)")
    static let rooms = integer("rooms", "R", "rooms every node joins (default 3)")
    static let conversations = integer("conversations", "C", "private conversations, each with 3-5 member nodes (default 2)")
    static let devices = integer(
        "devices", "D", "the last D nodes are paired devices of the first ones' persons, writing at once with them (default 0)")
    static let netns = Flag.flag("netns", "run each node in its own network namespace on a bridge (root); splits move cables")
    static let activePeers = integer(
        "active-peers", "K", "every node keeps about K links to random peers instead of one to each (parley run --active-peers)")
    static let pushTree = Flag.flag("push-tree", "with --active-peers, every node pushes along a broadcast tree (parley run --push-tree)")
    let options = [
        Self.nodes.spec, Self.duration.spec, Self.rate.spec, Self.seed.spec, Self.out.spec, Self.faults.spec, Self.rooms.spec, Self.conversations.spec,
        Self.devices.spec, Self.netns.spec, Self.activePeers.spec, Self.pushTree.spec,
    ]
    static let settleTimeout = number("settle-timeout", "SECONDS", "how long to wait for convergence after the last heal and write (default 60)")
    static let keepData = Flag.flag("keep-data", "keep the nodes' data directories under DIR/nodes (default: removed after the report)")
    static let binary = Option.value("binary", "PATH", "the parley binary for the nodes (default: this one)")
    static let quiet = Flag.flag("quiet", "no progress line")
    let advancedOptions = [Self.settleTimeout.spec, Self.keepData.spec, Self.binary.spec, Self.quiet.spec]
    let details = [
        "Every node gets a fresh data directory under DIR/nodes, listens on 127.0.0.1 and beacons only to "
            + "127.255.255.255 on a discovery port below 32768 derived from the pid and seed (with --netns: only inside the "
            + "lab's own namespaces). Writes go through each node's control socket (`author`): a write the node answers is "
            + "acknowledged and must reach every node that holds its partition. Workload: posts, edits, deletes, "
            + "reactions, tasks and conversation membership changes, spread over the rooms, the conversations and the nodes. "
            + "With --devices, the last D nodes are paired (`device pair`, `init --pair`) as devices of the first nodes' "
            + "persons before the start and write in the rooms as those persons.",
        "Faults (--faults): items separated by ';', each KIND[:key=value,...], times in seconds from the start. "
            + "kill:node=N,at=T,for=D (kill -9, restart after D); pause:node=N,at=T,for=D (SIGSTOP/SIGCONT); "
            + "split:groups=G,at=T,for=D (groups that cannot reach each other); skew:node=N,at=T,offset=S (restart with the "
            + "clock S seconds off, to the end); loss:node=N,at=T,for=D,rate=P,delay=MS (live pushes lost or late; no node: "
            + "all); broken:node=N,room=R (test only: the node discards what peers send of room R, so the lab fails). "
            + "'default', 'none', and 'random' or 'random:count=K' (drawn from the seed) are schedules.",
        "Verdict: after the last fault healed and the last write, the lab polls every node's digests until they are "
            + "equal (convergence time), then checks every acknowledged write on every node that should hold it, and "
            + "checks no chain forked, and measures per-delivery latency (p50/p95/p99), ops/s, wire bytes per op delivered and each node's peak RSS. "
            + "DIR/report.json and DIR/report.html hold the numbers and charts. A live progress line goes to stderr.",
        "Exit status: 0 when the cluster converged, lost nothing and nothing forked, 1 when it did not (or the lab could not run), "
            + "2 for a usage error. Ctrl-C stops every node and removes everything the lab made.",
    ]
    let examples = [
        "lab run --nodes 4 --duration 20 --rate 10 --seed 7 --out /tmp/lab4",
        "lab run --nodes 20 --duration 60 --rate 40 --seed 1 --out /tmp/lab20",
        "lab run --nodes 5 --duration 30 --rate 20 --seed 3 --out /tmp/lab5 --faults 'kill:node=1,at=5,for=5;loss:at=12,for=8,rate=0.5'",
    ]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        var configuration = LabConfiguration(out: absolute(try arguments.required(Self.out)))
        configuration.nodes = try arguments.value(Self.nodes) ?? configuration.nodes
        configuration.duration = try arguments.value(Self.duration) ?? configuration.duration
        configuration.rate = try arguments.value(Self.rate) ?? configuration.rate
        if let seed = try arguments.value(Self.seed) { configuration.seed = seed }
        configuration.faultSpec = try arguments.value(Self.faults)
        configuration.rooms = try arguments.value(Self.rooms) ?? configuration.rooms
        configuration.conversations = try arguments.value(Self.conversations) ?? configuration.conversations
        configuration.devices = try arguments.value(Self.devices) ?? configuration.devices
        configuration.netns = arguments[Self.netns]
        configuration.activePeers = try arguments.value(Self.activePeers)
        configuration.pushTree = arguments[Self.pushTree]
        configuration.settleTimeout = try arguments.value(Self.settleTimeout) ?? configuration.settleTimeout
        configuration.keepData = arguments[Self.keepData]
        configuration.binary = try arguments.value(Self.binary).map(absolute)
        configuration.command = (["parley"] + CommandLine.arguments.dropFirst()).joined(separator: " ")

        let cleanup = LabCleanup()
        let runner: LabRunner
        do {
            runner = try LabRunner(configuration: configuration, cleanup: cleanup, progress: ProgressLine(quiet: arguments[Self.quiet]))
        } catch {
            throw convert(error)
        }
        let nodeDirectory = configuration.out + "/nodes"
        let keepData = configuration.keepData
        let signals = SignalWatcher {
            cleanup.removeAll()
            if !keepData { try? FileManager.default.removeItem(atPath: nodeDirectory) }
            FileHandle.standardError.write(Data("\nparley: lab interrupted; its nodes were stopped and their data removed\n".utf8))
            exit(130)
        }
        defer { signals.cancel() }
        let report: LabReport
        do {
            report = try NodeConnection.wait { try await runner.run() }
        } catch let error as LabError {
            throw convert(error)
        }
        let output = context.output
        output.line(report.passed ? "PASS: the cluster converged, lost nothing and nothing forked" : "FAIL: " + failure(report))
        output.line(
            String(
                format:
                    "convergence %@, %d acknowledged writes, %d lost, latency p50/p95/p99 %@/%@/%@ ms, %.1f ops/s, %.0f wire bytes/op, %.2f copies/op, peak RSS %.1f MiB",
                report.convergenceSeconds.map { String(format: "%.2f s", $0) } ?? "never", report.acknowledgedWrites, report.lostWrites,
                ms(report.latencyMs.p50), ms(report.latencyMs.p95), ms(report.latencyMs.p99), report.opsPerSecond, report.wireBytesPerOp,
                report.copiesPerOp ?? 0,
                Double(report.nodes.map(\.peakRssBytes).max() ?? 0) / 1_048_576))
        if let parts = report.wireBreakdown { output.line("wire bytes/op by message type: \(parts)") }
        output.line("report: \(configuration.out)/report.json, \(configuration.out)/report.html")
        return report.passed ? 0 : 1
    }

    private func failure(_ report: LabReport) -> String {
        var parts: [String] = []
        if !report.converged { parts.append("the cluster did not converge (\(report.divergedPartitions.count) partition(s) differ)") }
        if report.lostWrites > 0 { parts.append("\(report.lostWrites) acknowledged write(s) lost") }
        if let forks = report.forks, forks > 0 { parts.append("\(forks) chain(s) forked") }
        return parts.joined(separator: "; ")
    }

    private func ms(_ value: Double?) -> String { value.map { String(format: "%.0f", $0) } ?? "-" }

    private func convert(_ error: LabError) -> CLIError {
        switch error {
        case .usage(let message): .usage(message, command: name)
        case .failure(let message): .failure("lab: " + message)
        }
    }

    func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    /// An option of a whole number.
    static func integer(_ name: String, _ valueName: String, _ help: String) -> Option<Int> {
        Option.value(name, valueName, help) { text, command throws(CLIError) in
            guard let value = Int(text) else { throw .usage("--\(name) must be a whole number, not '\(text)'", command: command) }
            return value
        }
    }

    /// An option of a finite number.
    static func number(_ name: String, _ valueName: String, _ help: String) -> Option<Double> {
        Option.value(name, valueName, help) { text, command throws(CLIError) in
            guard let value = Double(text), value.isFinite else { throw .usage("--\(name) must be a number, not '\(text)'", command: command) }
            return value
        }
    }
}
