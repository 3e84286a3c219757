// Real `parley run` processes on loopback for the node figures, started through the lab's
// `LabNode` (posix_spawn, control socket, RSS and CPU from /proc).
import Foundation
import Lab
import NodeRuntime

/// N nodes with fresh data directories under `root`, their own network secret (they never link to
/// another Parley node on this machine) and their own discovery port below 32768, no web UI.
// @unchecked: `runArguments` is set and read only by the benchmark's task, before and as it starts nodes.
final class BenchCluster: @unchecked Sendable {
    let root: String
    let binary: String
    let nodes: [LabNode]
    let cleanup = LabCleanup()
    let secretFile: String
    let discoveryPort: Int
    /// Options every `parley run` of this cluster gets (beyond loopback, port and secret).
    var runArguments: [String] = []

    nonisolated(unsafe) private static var made = 0

    var environment: [String: String] { ["HOME": root, "PARLEY_BROADCAST": "127.255.255.255"] }
    var logDirectory: String { root + "/logs" }

    /// Creates the directories and runs `parley init` for each node (not timed).
    init(name: String, count: Int, binary: String, scratch: String) async throws {
        Self.made += 1
        root = scratch + "/" + name
        self.binary = binary
        discoveryPort = 20_000 + Int((getpid() &* 31 &+ Int32(Self.made) &* 97) % 10_000)
        secretFile = root + "/network.secret"
        try FileManager.default.createDirectory(atPath: root + "/logs", withIntermediateDirectories: true)
        var generator = SystemRandomNumberGenerator()
        let secret = Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
        guard FileManager.default.createFile(atPath: secretFile, contents: secret, attributes: [.posixPermissions: 0o600]) else {
            throw BenchError("cannot write \(secretFile)")
        }
        nodes = (0..<count).map { LabNode(index: $0, root: scratch + "/" + name) }
        for node in nodes {
            let result = await LabProcess.run(
                binary, ["--data-dir", node.dataDirectory, "init", "--nick", node.name], environment: environment,
                captureIn: logDirectory, timeout: .seconds(30))
            guard result.status == 0 else { throw BenchError("\(binary) init failed: \(result.stderr)") }
            node.id = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    func databasePath(_ index: Int) -> String { nodes[index].dataDirectory + "/parley.db" }

    /// Spawns `parley run` for node `index`.
    func start(_ index: Int, extra: [String] = []) throws {
        let discovery = extra.contains("--no-discovery") ? [] : ["--discovery-port", String(discoveryPort)]
        let arguments =
            ["--listen", "127.0.0.1:0", "--broadcast", "127.255.255.255"] + discovery + ["--network-secret-file", secretFile]
            + runArguments + options.runArguments + extra
        try nodes[index].start(
            binary: binary, arguments: arguments, launcher: [], environment: environment, skew: 0, logDirectory: logDirectory,
            cleanup: cleanup)
    }

    /// Waits until node `index` answers on its control socket (polled every 2 ms).
    func waitStarted(_ index: Int, timeout: Double = 30) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !(try await nodes[index].checkStarted()) {
            if Date() > deadline { throw BenchError("\(nodes[index].name) did not start within \(Int(timeout)) s; see \(logDirectory)") }
            try? await Task.sleep(for: .milliseconds(2))
        }
    }

    /// Waits until every node has a link to every other; false after `timeout` seconds.
    func waitLinked(timeout: Double, poll: Duration = .milliseconds(20)) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if await LabNode.fullyLinkedCount(nodes) == nodes.count { return true }
            try? await Task.sleep(for: poll)
        }
        return false
    }

    /// The status of every running node.
    func statuses() async -> [StatusReport?] {
        var result: [StatusReport?] = []
        for node in nodes { result.append(await node.send(ControlRequest(.status), timeout: .seconds(5))?.status) }
        return result
    }

    /// Waits until every node's digest of `partition` is the same (read from the stores); false
    /// after `timeout` seconds.
    func waitConverged(_ partition: String, timeout: Double, poll: Duration = .milliseconds(20)) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let digests = nodes.indices.map { StoreReader.digests(path: databasePath($0), partitions: [partition])[partition] }
            if let first = digests.first, first != nil, digests.allSatisfy({ $0 == first }) { return true }
            try? await Task.sleep(for: poll)
        }
        return false
    }

    /// Stops every node (SIGTERM, then SIGKILL after 5 s).
    func stopAll() async {
        for node in nodes { await node.stop(grace: .seconds(5), cleanup: cleanup) }
    }

    /// Stops every node and removes the data directories.
    func remove() async {
        await stopAll()
        cleanup.removeAll()
        try? FileManager.default.removeItem(atPath: root)
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Seconds since `start` (an uptime in nanoseconds).
func secondsSince(_ start: UInt64) -> Double { Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 }
