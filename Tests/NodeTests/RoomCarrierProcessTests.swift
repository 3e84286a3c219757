import Foundation
import TestSupport
import Testing

extension NodeProcessTests {
    /// Rooms through carriers between real `parley run` processes (docs/DESIGN.md §3.5, §4.1.2):
    /// two nodes that joined a room but are not linked converse through a node that did not
    /// join it, which stores the room's ops and lists, shows and answers nothing of it.
    @Suite struct RoomCarriers {
        typealias Support = Conversations

        /// The texts of `history --room NAME --json` on `node`.
        static func texts(_ node: TestNode, room: String) async -> [String] {
            await node.json(["history", "--room", room, "--json"]).compactMap { $0["text"] as? String }
        }

        @Test func twoHoldersOfARoom_converseThroughANodeThatDidNotJoinIt() async throws {
            let cluster = NodeCluster(slot: 19)  // no discovery: the port is unused; the suite is serialized
            defer { cluster.shutdown() }
            let alice = try await cluster.node("alice"), bob = try await cluster.node("bob"), carol = try await cluster.node("carol")
            for node in [alice, bob] { #expect(await Support.run(node, ["join", "#Relay"]) == "joined #relay") }
            // alice and bob know only carol (static peers, no discovery): the room goes through
            // carol, who never joins it.
            try await Support.startLinkedThrough(carol, [alice, bob], in: cluster)
            #expect(!(await alice.lists([bob], as: "linked")))

            let said = ["alice: the relay works", "bob: heard you through carol"]
            await Support.run(alice, ["send", "--room", "relay", said[0]])
            await Support.run(bob, ["send", "--room", "relay", said[1]])
            let conversed = await poll(timeout: .seconds(20)) {
                for node in [alice, bob] where Set(await Self.texts(node, room: "relay")) != Set(said) { return false }
                return true
            }
            try #require(conversed, "\(cluster.logs)")

            // carol holds every op of the room (equal digests), as a carrier: not joined, not
            // listed, not readable by name, and not in the rooms it tells its peers about.
            let partition = try #require(await alice.json(["rooms", "--json"]).first { $0["name"] as? String == "relay" }?["partition"] as? String)
            let carried = await poll(timeout: .seconds(20)) {
                guard let reference = await Support.digest(alice, partition) else { return false }
                return await Support.digest(carol, partition) == reference
            }
            #expect(carried, "carol does not carry #relay\n\(cluster.logs)")
            let carolsRow = await carol.json(["digest", "--json"]).first { $0["partition"] as? String == partition }
            #expect(carolsRow?["kind"] as? String == "room" && carolsRow?["joined"] as? Bool == false, "\(String(describing: carolsRow))")
            #expect(!(await carol.json(["rooms", "--json"]).contains { $0["name"] as? String == "relay" }))
            let asked = await carol.parley(["history", "--room", "relay", "--json"])
            #expect(asked.exitCode != 0 && asked.stderr.contains("you have not joined #relay"), "\(asked)")
            let directory = await alice.json(["rooms", "--all", "--json"])
            #expect(directory.first { $0["name"] as? String == "relay" }?["people"] as? Int == 2, "\(directory)")

            // carol joins: the room is hers from then on, with what she carried.
            #expect(await Support.run(carol, ["join", "relay"]) == "joined #relay")
            #expect(Set(await Self.texts(carol, room: "relay")) == Set(said))
        }
    }
}
