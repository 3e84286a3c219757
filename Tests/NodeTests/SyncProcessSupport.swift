import Foundation
import Identity
import NodeRuntime
import Replica
import Store
import TestSupport
import Testing

/// Options of a node in the sync tests: loopback-quick links (`NodeCluster.fastTiming`) and an
/// anti-entropy round every second, the safety net under live push.
let syncTiming = NodeCluster.fastTiming + ["--sync-interval", "1000"]

extension TestNode {
    /// Standard output of `parley arguments` parsed as the JSON array a `--json` command prints
    /// (empty when the command fails).
    func json(_ arguments: [String]) async -> [[String: Any]] {
        let result = await parley(arguments)
        guard result.exitCode == 0, let data = result.stdout.data(using: .utf8),
            let array = try? JSONSerialization.jsonObject(with: data) as? [[String: Any]]
        else { return [] }
        return array
    }

    /// The rows of `parley digest --json` for partitions every node shares (rooms and the
    /// directory; each node's own `self` partition is its alone), as comparable lines; only
    /// the rooms in `rooms` if given.
    func sharedDigests(rooms: Set<String>? = nil) async -> [String] {
        await json(["digest", "--json"]).filter { row in
            switch row["kind"] as? String {
            case "directory": true
            case "room": rooms.map { $0.contains(row["name"] as? String ?? "") } ?? true
            default: false
            }
        }.map { row in
            ["kind", "name", "partition", "ops", "authors", "digest"].map { "\(row[$0] ?? "")" }.joined(separator: " ")
        }.sorted()
    }

    /// Ops in the lobby, from `parley digest --json` (0 when it fails).
    func lobbyOps() async -> Int {
        await json(["digest", "--json"]).first { $0["kind"] as? String == "room" && $0["name"] as? String == "lobby" }?["ops"] as? Int ?? 0
    }

    /// The `sync` object of `parley status --json` (nil when no node answers).
    func syncStatus() async -> [String: Any]? {
        await json(["status", "--json"]).first?["sync"] as? [String: Any]
    }

    /// Where the running node listens (`HOST:PORT`), from `parley status --json`.
    func listenAddress() async -> String? {
        await json(["status", "--json"]).first?["listen"] as? String
    }

    /// `parley history --room lobby --json`, as printed (byte-for-byte comparable between nodes).
    func lobbyHistory() async -> String {
        await parley(["history", "--room", "lobby", "--json"]).stdout
    }

    /// Sends `count` messages to the lobby with `parley send`, one process each; returns their ids.
    func post(_ count: Int, _ prefix: String, sourceLocation: SourceLocation = #_sourceLocation) async -> [String] {
        var ids: [String] = []
        for index in 0..<count {
            let result = await parley(["send", "--room", "lobby", "\(prefix) \(index)"])
            #expect(result.exitCode == 0, "\(result)", sourceLocation: sourceLocation)
            ids.append(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        return ids
    }

    /// Posts `count` messages to the lobby as this node's user the way `parley send` does — a
    /// transaction each in the node's store, written from outside the node, then a poke — but
    /// without starting a process per message (a thousand of those would cost half a minute).
    func postDirectly(_ count: Int, _ prefix: String) async throws {
        let identity = try KeyFile.load(at: dataDir + "/identity.key")
        try withStore { store in
            for index in 0..<count {
                let now = UInt64(Date().timeIntervalSince1970 * 1_000)
                try store.author(.post(text: "\(prefix) \(index)", attachments: [], location: nil, replyTo: nil), in: lobby.id, by: identity, nowMillis: now)
            }
        }
        _ = await poke()
    }

    /// Sends `poke` on the control socket, as a command does after writing; returns the new ops
    /// the node found (nil when no node answers).
    func poke() async -> Int? {
        guard let client = try? ControlClient.connect(dataDirectory: dataDir) else { return nil }
        defer { client.close() }
        return try? await client.send(ControlRequest(.poke)).poke?.ops
    }

    /// Stops the running node with SIGTERM and waits until it is gone.
    func stop(sourceLocation: SourceLocation = #_sourceLocation) async {
        guard let process else { return }
        process.kill(SIGTERM)
        let gone = await process.waitForExit(timeout: .seconds(10))
        #expect(gone && process.exitStatus == 0, "\(name) did not stop cleanly:\n\(process.stderr)", sourceLocation: sourceLocation)
    }

    /// Writes a peers file listing `others` (their current listen addresses and ids); returns its path.
    func writePeersFile(_ others: [TestNode], in root: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> String {
        var lines: [String] = []
        for other in others {
            let address = try #require(await other.listenAddress(), "\(other.name) is not running", sourceLocation: sourceLocation)
            lines.append("\(address) \(other.id)")
        }
        let path = root + "/\(name)-peers-\(UUID().uuidString.prefix(4)).txt"
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Runs `body` on this node's store through a connection of the test's own, as a command does.
    @discardableResult
    func withStore<T>(_ body: (ReplicaStore) throws -> T) throws -> T {
        let store = try NodeStore.open(dataDir)
        defer { store.database.close() }
        return try body(store)
    }
}

/// Whether every node shows the same shared digests (of `rooms` if given), and they are not empty.
func sameDigests(_ nodes: [TestNode], rooms: Set<String>? = nil) async -> Bool {
    var first: [String]?
    for node in nodes {
        let digests = await node.sharedDigests(rooms: rooms)
        guard !digests.isEmpty else { return false }
        if let first, first != digests { return false }
        first = first ?? digests
    }
    return true
}

/// Milliseconds since `start`, for the figures a test prints.
func millis(since start: ContinuousClock.Instant) -> Int {
    let elapsed = ContinuousClock.now - start
    return Int(elapsed.components.seconds * 1_000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
}
