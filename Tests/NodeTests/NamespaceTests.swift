import Foundation
import TestSupport
import Testing

/// Real hosts on a real (virtual) LAN: network namespaces joined by a bridge, as NETWORK-TESTS.md
/// describes. Every address is private to the namespaces the test creates, and a cleanup that
/// always runs deletes them.
struct TestNetwork {
    /// `ip`, when this process may use it (root and iproute2 installed).
    static let ip: String? = {
        guard getuid() == 0 else { return nil }
        return ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    static let skipReason: Comment = "needs root and iproute2's `ip` to create network namespaces"

    let prefix: String
    let subnet: Int
    let hosts: Int
    /// Where `ip`'s output is captured: the temporary directory, which outlives the cluster's.
    let scratch = FileManager.default.temporaryDirectory.path
    private(set) var created: [String] = []

    /// Namespaces `<prefix>-sw` (the bridge) and `<prefix>-n1…nN` on 10.77.`subnet`.0/24.
    init(hosts: Int) {
        let pid = Int(getpid())
        prefix = "pt\(pid % 100_000)"
        subnet = 20 + pid % 200
        self.hosts = hosts
    }

    var switchNamespace: String { "\(prefix)-sw" }
    func namespace(_ host: Int) -> String { "\(prefix)-n\(host)" }
    func address(_ host: Int) -> String { "10.77.\(subnet).\(host)" }
    var broadcast: String { "10.77.\(subnet).255" }

    /// Builds the bridge and the hosts; throws with the failing command's output.
    mutating func create() async throws {
        try await run(["netns", "add", switchNamespace])
        created.append(switchNamespace)
        try await run(["-n", switchNamespace, "link", "add", "br0", "type", "bridge"])
        try await run(["-n", switchNamespace, "link", "set", "br0", "up"])
        for host in 1...hosts {
            let namespace = namespace(host)
            try await run(["netns", "add", namespace])
            created.append(namespace)
            try await run(["-n", switchNamespace, "link", "add", "p\(host)", "type", "veth", "peer", "name", "eth0", "netns", namespace])
            try await run(["-n", switchNamespace, "link", "set", "p\(host)", "master", "br0"])
            try await run(["-n", switchNamespace, "link", "set", "p\(host)", "up"])
            try await run(["-n", namespace, "link", "set", "lo", "up"])
            try await run(["-n", namespace, "addr", "add", "\(address(host))/24", "brd", "+", "dev", "eth0"])
            try await run(["-n", namespace, "link", "set", "eth0", "up"])
        }
    }

    /// Pulls (`up: false`) or plugs back host `host`'s cable.
    func setCable(_ host: Int, up: Bool) async throws {
        try await run(["-n", switchNamespace, "link", "set", "p\(host)", up ? "up" : "down"])
    }

    /// Deletes every namespace this test created (their veth pairs go with them); returns the
    /// failures.
    @discardableResult
    func destroy() async -> [String] {
        var failures: [String] = []
        for namespace in created.reversed() {
            do {
                try await run(["netns", "del", namespace])
            } catch {
                failures.append("\(error)")
            }
        }
        return failures
    }

    /// The launcher that runs a program inside host `host`.
    func launcher(_ host: Int) -> [String] { [Self.ip!, "netns", "exec", namespace(host)] }

    @discardableResult
    private func run(_ arguments: [String]) async throws -> CompletedProcess {
        let result = await CompletedProcess.run(Self.ip!, arguments, captureIn: scratch, timeout: .seconds(10))
        guard result.exitCode == 0 else { throw NetworkSetupError(description: "\(result)") }
        return result
    }

    struct NetworkSetupError: Error, CustomStringConvertible {
        let description: String
    }
}

extension NodeProcessTests {
    @Suite struct Namespaces {
        @Test(.enabled(if: TestNetwork.ip != nil, TestNetwork.skipReason))
        func threeHostsOnABridge_discoverByRealBroadcast_noticeACut_andRelinkAfterTheHeal() async throws {
            let cluster = NodeCluster(slot: 8)
            var network = TestNetwork(hosts: 3)
            do {
                try await exercise(cluster, &network)
            } catch {
                Issue.record(error)
            }
            // Always, also after a failure (a `defer` cannot wait for the `ip` commands).
            cluster.shutdown()
            let failures = await network.destroy()
            #expect(failures.isEmpty, "cleanup failed: \(failures)")
        }

        private func exercise(_ cluster: NodeCluster, _ network: inout TestNetwork) async throws {
            try await network.create()
            var nodes: [TestNode] = []
            for host in 1...3 { nodes.append(try await cluster.node("host\(host)")) }
            for (index, node) in nodes.enumerated() {
                try await node.start(
                    ["--listen", "0.0.0.0:7748", "--broadcast", network.broadcast, "--discovery-port", "7747"]
                        + NodeCluster.fastTiming, launcher: network.launcher(index + 1))
            }
            try #require(await poll(timeout: .seconds(8)) { await allLinked(nodes) }, "the hosts did not link\n\(cluster.logs)")
            let addresses = await nodes[0].peers().flatMap { $0["addresses"] as? [String] ?? [] }
            #expect(
                addresses.contains("\(network.address(2)):7748") && addresses.contains("\(network.address(3)):7748"),
                "peers are known by their LAN addresses: \(addresses)")

            let (cut, others) = (nodes[2], Array(nodes[0..<2]))
            try await network.setCable(3, up: false)
            let noticed = await poll(timeout: .seconds(8)) {
                for node in others {
                    let states = await node.peers().filter { $0["id"] as? String == cut.id }.compactMap { $0["state"] as? String }
                    guard states.contains(where: { $0 == "suspect" || $0 == "gone" }) else { return false }
                }
                return true
            }
            #expect(noticed, "the cut host is not shown suspect or gone\n\(cluster.logs)")
            #expect(await allLinked(others), "the hosts still connected stay linked")

            try await network.setCable(3, up: true)
            #expect(await poll(timeout: .seconds(15)) { await allLinked(nodes) }, "the hosts did not relink after the heal\n\(cluster.logs)")
        }
    }
}
