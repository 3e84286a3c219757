import Foundation
import TestSupport
import Testing

/// Tests that run real `parley run` processes. Serialized: each starts several nodes, and on two
/// shared cores they are faster and steadier one at a time.
@Suite(.serialized) struct NodeProcessTests {}

extension NodeProcessTests {
    @Suite struct LoopbackDiscovery {
        @Test func fiveNodes_linkByLoopbackBroadcast_seeAKilledOneGone_andRelinkItAfterRestart() throws {
            let cluster = NodeCluster(slot: 0)
            defer { cluster.shutdown() }
            let nodes = try (1...5).map { try cluster.node("n\($0)") }
            for node in nodes { try node.start(cluster.loopbackArguments + NodeCluster.fastTiming) }

            let allLinked = { nodes.allSatisfy { node in node.lists(nodes.filter { $0 !== node }, as: "linked") } }
            try #require(poll(timeout: .seconds(5), allLinked), "five nodes did not all link within 5 s\n\(cluster.logs)")
            let sample = try #require(nodes[0].peers().first)
            for field in ["id", "nick", "addresses", "state", "since", "last_seen", "direction"] {
                #expect(sample[field] != nil, "peers --json lacks \(field)")
            }

            let victim = nodes[4], survivors = Array(nodes[0..<4])
            victim.kill()
            let seenGone = poll(timeout: .seconds(10)) { survivors.allSatisfy { $0.peerIDs(inState: "gone").contains(victim.id) } }
            #expect(seenGone, "the killed node is not shown gone\n\(cluster.logs)")
            #expect(survivors.allSatisfy { node in node.lists(survivors.filter { $0 !== node }, as: "linked") })

            try victim.start(cluster.loopbackArguments + NodeCluster.fastTiming)
            #expect(poll(timeout: .seconds(10), allLinked), "the restarted node did not relink\n\(cluster.logs)")
        }

        @Test func twoDeployments_onOneHost_neverLink_andDoctorNamesTheOtherSecret() throws {
            let cluster = NodeCluster(slot: 1)
            defer { cluster.shutdown() }
            let secretA = cluster.root + "/a.secret", secretB = cluster.root + "/b.secret"
            try Data("deployment A".utf8).write(to: URL(fileURLWithPath: secretA))
            try Data("deployment B".utf8).write(to: URL(fileURLWithPath: secretB))
            let a1 = try cluster.node("a1"), a2 = try cluster.node("a2"), b1 = try cluster.node("b1"), b2 = try cluster.node("b2")
            for node in [a1, a2] { try node.start(cluster.loopbackArguments + NodeCluster.fastTiming + ["--network-secret-file", secretA]) }
            for node in [b1, b2] { try node.start(cluster.loopbackArguments + NodeCluster.fastTiming + ["--network-secret-file", secretB]) }

            let pairsLinked = poll(timeout: .seconds(5)) {
                a1.lists([a2], as: "linked") && a2.lists([a1], as: "linked") && b1.lists([b2], as: "linked") && b2.lists([b1], as: "linked")
            }
            #expect(pairsLinked, "\(cluster.logs)")
            // A generous window: several beacon rounds in which a cross link could form.
            let crossed = poll(timeout: .seconds(3)) {
                let seenByA = Set([a1, a2].flatMap { $0.peers().compactMap { $0["id"] as? String } })
                let seenByB = Set([b1, b2].flatMap { $0.peers().compactMap { $0["id"] as? String } })
                return !seenByA.isDisjoint(with: [b1.id, b2.id]) || !seenByB.isDisjoint(with: [a1.id, a2.id])
            }
            #expect(!crossed, "nodes of different deployments know each other\n\(cluster.logs)")
            #expect(Set(a1.peers().compactMap { $0["id"] as? String }) == [a2.id])
            #expect(Set(b1.peers().compactMap { $0["id"] as? String }) == [b2.id])

            let doctor = a1.parley(["doctor"])
            #expect(doctor.exitCode == 0, "\(doctor)")
            #expect(doctor.stdout.contains("uses a different network secret"), "\(doctor)")
        }
    }
}
