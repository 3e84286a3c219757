import Foundation
import TestSupport
import Testing

/// Ports for one test run: below 32768 (the ephemeral range starts there) and derived from the
/// test process's pid, so concurrent runs on one machine (other engineers, CI) do not share a
/// discovery port. `slot` (0..<25) separates the tests of one run.
enum TestPorts {
    static func port(slot: Int) -> UInt16 {
        precondition((0..<25).contains(slot), "25 slots per run")
        return UInt16(20_000 + Int(getpid() % 400) * 25 + slot)
    }
}

/// Waits until `condition` holds, checking every `interval`, for at most `timeout`; true if it
/// held. Never a bare sleep: a test waits exactly as long as the system needs, up to a bound.
/// The condition is checked once more after the deadline, so a test starved of CPU by others
/// running in parallel fails only if the condition is really false.
@discardableResult
func poll(timeout: Duration, interval: Duration = .milliseconds(100), _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if await condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: interval)
    }
}

/// Whether every node lists every other as linked.
func allLinked(_ nodes: [TestNode]) async -> Bool {
    for node in nodes where !(await node.lists(nodes.filter { $0 !== node }, as: "linked")) { return false }
    return true
}

/// A set of nodes for one test: a temporary directory with a data directory per node, the
/// `parley run` processes, and their logs (shown when the test fails).
///
/// Every node beacons only to 127.255.255.255 on the cluster's discovery port (NETWORK-TESTS.md),
/// or runs with `--no-discovery` or inside a namespace the test made. `shutdown()` kills every
/// process and removes the directory; call it in a `defer`.
// @unchecked: `nodes` is touched only by the test's task (adding nodes, `shutdown`).
final class NodeCluster: @unchecked Sendable {
    let root: String
    let discoveryPort: UInt16
    private(set) var nodes: [TestNode] = []
    /// Options for a quick test: a stable beacon interval of 1 s and pings every 500 ms, so a
    /// lost peer is gone within seconds instead of minutes.
    static let fastTiming = ["--max-beacon-interval", "1000", "--ping-interval", "500", "--handshake-timeout", "2000"]

    init(slot: Int) {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("parley-node-test-\(UUID().uuidString.prefix(8))").path
        try? FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        discoveryPort = TestPorts.port(slot: slot)
    }

    /// A new node named `name` (`parley init --nick name`), not yet running.
    func node(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> TestNode {
        let node = TestNode(name: name, dataDir: root + "/" + name, cluster: self)
        let result = await node.parley(["init", "--nick", name])
        try #require(result.exitCode == 0, "\(result)", sourceLocation: sourceLocation)
        node.id = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        nodes.append(node)
        return node
    }

    /// A node named `name` whose data directory a test sets up itself (`init --pair`), not yet
    /// running; its `id` is for the test to set.
    func pairedNode(_ name: String) async throws -> TestNode {
        let node = TestNode(name: name, dataDir: root + "/" + name, cluster: self)
        nodes.append(node)
        return node
    }

    /// The arguments of a node on loopback with this cluster's discovery port.
    var loopbackArguments: [String] {
        ["--listen", "127.0.0.1:0", "--broadcast", "127.255.255.255", "--discovery-port", "\(discoveryPort)"]
    }

    /// Every node's log, for a failure message.
    var logs: String {
        nodes.map { node in
            "---- \(node.name) (\(node.id.prefix(6))) ----\n" + node.runs.map { $0.stderr }.joined(separator: "---- restart ----\n")
        }.joined(separator: "\n")
    }

    /// Kills every process and removes the directory.
    func shutdown() {
        for node in nodes { node.kill() }
        try? FileManager.default.removeItem(atPath: root)
    }
}

/// One node of a cluster: its data directory, identity and `parley run` processes.
// @unchecked: `id` and `runs` are touched only by the test's task that starts and stops the node.
final class TestNode: @unchecked Sendable {
    let name: String
    let dataDir: String
    var id = ""
    private(set) var runs: [ChildProcess] = []
    private unowned let cluster: NodeCluster

    init(name: String, dataDir: String, cluster: NodeCluster) {
        self.name = name
        self.dataDir = dataDir
        self.cluster = cluster
    }

    var process: ChildProcess? { runs.last }

    /// Starts `parley run` with `arguments` (after `--data-dir`), through `launcher` if given
    /// (`ip netns exec NS`); waits until its control socket answers.
    func start(_ arguments: [String], launcher: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let binary = try #require(ParleyExecutable.path, Comment(rawValue: ParleyExecutable.notFoundMessage), sourceLocation: sourceLocation)
        // Test nodes serve no web UI: they would all try 127.0.0.1:7749.
        let web = arguments.contains { $0.hasPrefix("--web") || $0 == "--no-web" } ? [] : ["--no-web"]
        let all = ["--data-dir", dataDir, "run"] + arguments + web
        let process = try ChildProcess(
            executable: launcher.first ?? binary, arguments: launcher.isEmpty ? all : Array(launcher.dropFirst()) + [binary] + all,
            environment: ["HOME": cluster.root], captureIn: cluster.root, name: "\(name)-\(runs.count)")
        runs.append(process)
        let up = await poll(timeout: .seconds(10)) {
            guard process.isRunning else { return true }
            return await parley(["status", "--json"]).exitCode == 0
        }
        try #require(up && process.isRunning, "\(name) did not start:\n\(process.stderr)", sourceLocation: sourceLocation)
    }

    /// Kills the running process (SIGKILL by default).
    func kill(_ signal: Int32 = SIGKILL) {
        process?.kill(signal)
    }

    /// Runs `parley --data-dir DIR arguments` to completion.
    func parley(_ arguments: [String], environment: [String: String] = [:]) async -> CompletedProcess {
        guard let binary = ParleyExecutable.path else {
            return CompletedProcess(arguments: arguments, exitCode: -1, stdout: "", stderr: ParleyExecutable.notFoundMessage, timedOut: false)
        }
        var env = ["HOME": cluster.root]
        env.merge(environment) { _, new in new }
        return await CompletedProcess.run(binary, ["--data-dir", dataDir] + arguments, environment: env, captureIn: cluster.root)
    }

    /// `parley peers --json`, as objects (empty when it fails).
    func peers() async -> [[String: Any]] {
        let result = await parley(["peers", "--json"])
        guard result.exitCode == 0, let data = result.stdout.data(using: .utf8),
            let array = try? JSONSerialization.jsonObject(with: data) as? [[String: Any]]
        else { return [] }
        return array
    }

    /// The ids this node lists, in any state.
    func knownIDs() async -> Set<String> {
        Set(await peers().compactMap { $0["id"] as? String })
    }

    /// The ids this node lists in `state`.
    func peerIDs(inState state: String) async -> Set<String> {
        Set(await peers().filter { $0["state"] as? String == state }.compactMap { $0["id"] as? String })
    }

    /// Whether this node lists exactly `others` as linked (and maybe more peers in other states).
    func lists(_ others: [TestNode], as state: String) async -> Bool {
        let listed = await peerIDs(inState: state)
        return others.allSatisfy { listed.contains($0.id) }
    }
}
