import Foundation
import TestSupport
import Testing

/// `parley sim` (issue 37): a seeded simulation of nodes writing into a room, in one process;
/// the same options give the same report (apart from `wall_seconds`), with the contract's keys,
/// and it passes when every node holds every write within the link bound.
@Suite(.onCommandThreads) struct SimCommandTests {
    /// A simulation computes for seconds: it waits for a core of the test process's budget and
    /// runs off the cooperative pool (`onThread(cores:)`), as the simulation tests do.
    static func simulate(_ sandbox: Sandbox, _ arguments: [String]) async -> ParleyRun {
        await onThread(cores: 1) { sandbox.parleyRaw(arguments) }
    }

    @Test func aSeededRun_passes_andTheSameOptionsGiveTheSameReport() async throws {
        try await withSandbox { sandbox in
            let options = ["sim", "--nodes", "24", "--writes", "100", "--seed", "5", "--duration", "90", "--churn", "0.1", "--active-peers", "4"]
            let first = await Self.simulate(sandbox, options + ["--out", sandbox.root + "/a"])
            expectSuccess(first)
            #expect(first.stdout.hasPrefix("PASS: every node holds all 100 writes; 24 nodes, at most "), "\(first.stdout)")
            let second = await Self.simulate(sandbox, options + ["--out", sandbox.root + "/b"])
            expectSuccess(second)
            func report(_ directory: String) throws -> (text: String, object: [String: Any]) {
                let path = sandbox.root + "/\(directory)/report.json"
                let text = try String(contentsOfFile: path, encoding: .utf8)
                let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
                #expect(object["wall_seconds"] is Double)
                return (text.split(separator: "\n").filter { !$0.contains("wall_seconds") }.joined(separator: "\n"), object)
            }
            let (a, object) = try report("a")
            #expect(try report("b").text == a, "the same seed gave another report")
            #expect(object["connected"] as? Bool == true && object["seed"] as? Int == 5 && object["crashes"] as? Int == 2)
            #expect(object["converged"] as? Bool == true && object["lost_writes"] as? Int == 0 && object["writes"] as? Int == 100)
            for key in ["hops", "latency_ms"] {
                let percentiles = try #require(object[key] as? [String: Any], "\(key)")
                #expect(Set(percentiles.keys).isSuperset(of: ["p50", "p95", "p99"]), "\(key): \(percentiles)")
            }
            #expect(object["copies_per_op"] is Double && object["bytes_per_op"] is Double, "\(object)")
            let links = try #require(object["links_per_node"] as? [String: Any])
            #expect((links["max"] as? Int ?? 99) <= 8, "within twice the active size")
        }
    }
}
