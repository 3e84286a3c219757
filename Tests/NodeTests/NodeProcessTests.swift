import Foundation
import TestSupport
import Testing

/// Tests that run real `parley run` processes. Serialized: each starts several nodes, and on two
/// shared cores they are faster and steadier one at a time.
@Suite(.serialized) struct NodeProcessTests {}

extension NodeProcessTests {
    @Suite struct LoopbackDiscovery {
        @Test func fiveNodes_linkByLoopbackBroadcast_seeAKilledOneGone_andRelinkItAfterRestart() async throws {
            let cluster = NodeCluster(slot: 0)
            defer { cluster.shutdown() }
            var nodes: [TestNode] = []
            for index in 1...5 { nodes.append(try await cluster.node("n\(index)")) }
            for node in nodes { try await node.start(cluster.loopbackArguments + NodeCluster.fastTiming) }

            let linked = await poll(timeout: .seconds(5)) { await allLinked(nodes) }
            try #require(linked, "five nodes did not all link within 5 s\n\(cluster.logs)")
            let sample = try #require(await nodes[0].peers().first)
            for field in ["id", "nick", "addresses", "state", "since", "last_seen", "direction"] {
                #expect(sample[field] != nil, "peers --json lacks \(field)")
            }

            let victim = nodes[4], survivors = Array(nodes[0..<4])
            victim.kill()
            let seenGone = await poll(timeout: .seconds(10)) {
                for node in survivors where !(await node.peerIDs(inState: "gone").contains(victim.id)) { return false }
                return true
            }
            #expect(seenGone, "the killed node is not shown gone\n\(cluster.logs)")
            #expect(await allLinked(survivors), "the survivors stay linked\n\(cluster.logs)")

            try await victim.start(cluster.loopbackArguments + NodeCluster.fastTiming)
            #expect(await poll(timeout: .seconds(10)) { await allLinked(nodes) }, "the restarted node did not relink\n\(cluster.logs)")
        }

        @Test func twoDeployments_onOneHost_neverLink_andDoctorNamesTheOtherSecret() async throws {
            let cluster = NodeCluster(slot: 1)
            defer { cluster.shutdown() }
            let secretA = cluster.root + "/a.secret", secretB = cluster.root + "/b.secret"
            try Data("deployment A".utf8).write(to: URL(fileURLWithPath: secretA))
            try Data("deployment B".utf8).write(to: URL(fileURLWithPath: secretB))
            let a1 = try await cluster.node("a1"), a2 = try await cluster.node("a2")
            let b1 = try await cluster.node("b1"), b2 = try await cluster.node("b2")
            for node in [a1, a2] { try await node.start(cluster.loopbackArguments + NodeCluster.fastTiming + ["--network-secret-file", secretA]) }
            for node in [b1, b2] { try await node.start(cluster.loopbackArguments + NodeCluster.fastTiming + ["--network-secret-file", secretB]) }

            let pairsLinked = await poll(timeout: .seconds(5)) {
                guard await allLinked([a1, a2]) else { return false }
                return await allLinked([b1, b2])
            }
            #expect(pairsLinked, "\(cluster.logs)")
            // A generous window: several beacon rounds in which a cross link could form.
            let crossed = await poll(timeout: .seconds(3)) {
                let seenByA = await Set(a1.knownIDs()).union(a2.knownIDs())
                let seenByB = await Set(b1.knownIDs()).union(b2.knownIDs())
                return !seenByA.isDisjoint(with: [b1.id, b2.id]) || !seenByB.isDisjoint(with: [a1.id, a2.id])
            }
            #expect(!crossed, "nodes of different deployments know each other\n\(cluster.logs)")
            #expect(await a1.knownIDs() == [a2.id])
            #expect(await b1.knownIDs() == [b2.id])

            let doctor = await a1.parley(["doctor"])
            #expect(doctor.exitCode == 0, "\(doctor)")
            #expect(doctor.stdout.contains("uses a different network secret"), "\(doctor)")
        }
    }
}
