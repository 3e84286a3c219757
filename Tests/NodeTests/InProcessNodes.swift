import Discovery
import Foundation
import Identity
import Replica
import Store
import Synchronization
import TestSupport
import Testing
import Transport

@testable import NodeRuntime

/// Nodes in this process, on loopback without discovery (static peers only), each with a data
/// directory under one temporary root. The test reads and writes a node's store through its own
/// connection, as a `parley` command does, and pokes the node afterwards.
///
/// Call `stopAll()` at the end (also after a failure: in a `defer` with `await`, or before
/// each `#require`), then `removeFiles()`.
// @unchecked: `nodes` is touched only by the test's task (`start`, `stopAll`).
final class InProcessNodes: @unchecked Sendable {
    let root: String
    private(set) var nodes: [Node] = []

    init() {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("parley-sync-\(UUID().uuidString.prefix(8))").path
        try? FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    /// The data directory of node `name`.
    func directory(_ name: String) -> String { root + "/" + name }

    /// The configuration of node `name`: loopback, any port, no discovery, quick timers.
    func configuration(_ name: String) -> NodeConfiguration {
        try? FileManager.default.createDirectory(atPath: directory(name), withIntermediateDirectories: true)
        var configuration = NodeConfiguration(dataDirectory: directory(name))
        configuration.listenHost = "127.0.0.1"
        configuration.listenPort = 0
        configuration.discoveryPort = nil
        configuration.gossip.antiEntropyInterval = 1_000
        configuration.localWritePollInterval = 50
        return configuration
    }

    /// Starts a node; returns it and its link address.
    func start(
        _ configuration: NodeConfiguration, identity: Identity, log: NodeLog = .silent,
        handler: sending (any LinkMessageHandler)? = nil
    ) async throws -> (node: Node, address: SocketAddress) {
        let node = Node(configuration: configuration, identity: identity, log: log, handler: handler)
        let address = try await node.start()
        nodes.append(node)
        return (node, address)
    }

    /// A static peer entry for a node listening at `address` as `identity`.
    static func peer(_ identity: Identity, at address: SocketAddress) -> StaticPeer {
        StaticPeer(endpoint: PeerEndpoint(host: "127.0.0.1", port: address.port), key: identity.id)
    }

    /// Runs `body` with a store connection of its own on node `name`'s file (as a command does).
    @discardableResult
    func withStore<T>(_ name: String, _ body: (ReplicaStore) throws -> T) throws -> T {
        // A started node's identity seals its store key (these identities are not on disk).
        let identity = nodes.first { $0.configuration.dataDirectory == directory(name) }?.identity
        let store = try NodeStore.open(directory(name), identity: identity)
        defer { store.database.close() }
        return try body(store)
    }

    /// Makes each named node's data directory and a store that has joined `partition`, before
    /// any of them starts.
    func prepare(_ names: [String], joining partition: PartitionDescriptor) throws {
        for name in names {
            _ = configuration(name)
            try withStore(name) { try $0.log.ensurePartition(partition, joined: true) }
        }
    }

    /// Ops node `name` holds in `partition` (0 when the file cannot be read yet).
    func opCount(_ name: String, _ partition: PartitionID) -> Int {
        (try? withStore(name) { try $0.log.opCount(partition) }) ?? 0
    }

    /// Stops every node.
    func stopAll() async {
        for node in nodes { await node.stop() }
    }

    func removeFiles() {
        try? FileManager.default.removeItem(atPath: root)
    }
}

/// Log lines kept in memory, to check what a node said.
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])

    /// A log of `level` and above into these lines.
    func log(_ level: NodeLog.Level = .info) -> NodeLog {
        NodeLog(level: level) { line in self.lines.withLock { $0.append(line) } }
    }

    var all: [String] { lines.withLock { $0 } }
    func contains(_ text: String) -> Bool { all.contains { $0.contains(text) } }
}

/// Polls `condition` every 20 ms for at most `timeout`, then once more.
func eventually(_ timeout: Duration = .seconds(20), _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return await condition()
}

let lobby = PartitionDescriptor.room(RoomName("lobby")!)
