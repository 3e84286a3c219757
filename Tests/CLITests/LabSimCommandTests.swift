import Foundation
import Testing

/// `parley lab sim` (issue 37, step 1): a seeded simulation of the overlay, in one process; the
/// same options give the same report (apart from `wall_seconds`), and it passes when the nodes
/// form one graph within the link bound.
@Suite struct LabSimCommandTests {
    @Test func aSeededRun_passes_andTheSameOptionsGiveTheSameReport() throws {
        try withSandbox { sandbox in
            let options = ["lab", "sim", "--nodes", "24", "--seed", "5", "--duration", "90", "--churn", "0.1", "--active-peers", "4"]
            let first = sandbox.parleyRaw(options + ["--out", sandbox.root + "/a"])
            expectSuccess(first)
            #expect(first.stdout.hasPrefix("PASS: 24 nodes form one graph, at most "), "\(first.stdout)")
            let second = sandbox.parleyRaw(options + ["--out", sandbox.root + "/b"])
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
            let links = try #require(object["links_per_node"] as? [String: Any])
            #expect((links["max"] as? Int ?? 99) <= 8, "within twice the active size")
        }
    }
}
