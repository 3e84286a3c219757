import Foundation
import TestSupport
import Testing

extension NodeProcessTests {
    /// docs/DESIGN.md §6.1: "Commands work whether or not a node runs." Every command of the contract
    /// (but chat, lab, conversations and attachments) against a running node; what one node's
    /// commands write reaches its linked peer.
    @Suite struct CommandsWithANode {
        @Test func everyCommand_worksWhileTheNodeRuns_andItsWritesReachThePeer() async throws {
            let cluster = NodeCluster(slot: 14)
            defer { cluster.shutdown() }
            let solo = try await cluster.node("solo"), friend = try await cluster.node("friend")
            try await solo.start(cluster.loopbackArguments + syncTiming + ["--join", "dev"])
            try await friend.start(cluster.loopbackArguments + syncTiming + ["--join", "dev"])
            try #require(await poll(timeout: .seconds(10)) { await allLinked([solo, friend]) }, "\(cluster.logs)")

            func ok(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) async -> String {
                let result = await solo.parley(arguments)
                #expect(result.exitCode == 0, "\(result)", sourceLocation: sourceLocation)
                return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            #expect(Set(await solo.json(["rooms", "--json"]).compactMap { $0["name"] as? String }) == ["dev", "lobby"], "run --join dev")
            _ = await ok(["join", "kitchen"])
            #expect(await solo.json(["rooms", "--json"]).contains { $0["name"] as? String == "kitchen" })
            _ = await ok(["leave", "kitchen"])
            let id = await ok(["send", "--room", "dev", "hello from solo"])
            _ = await ok(["edit", id, "hello from solo, edited"])
            _ = await ok(["react", id, "🎉"])
            let gone = await ok(["send", "--room", "dev", "soon gone"])
            _ = await ok(["delete", gone])
            _ = await ok(["read", "--room", "dev"])
            let task = await ok(["task", "add", "--room", "dev", "ship it"])
            _ = await ok(["task", "set", task, "--status", "complete"])
            let doomed = await ok(["task", "add", "--room", "dev", "drop it"])
            _ = await ok(["task", "delete", doomed])
            _ = await ok(["profile", "--display-name", "Solo Node", "--status", "testing"])
            #expect(await solo.json(["profile", "--json"]).first?["display_name"] as? String == "Solo Node")
            #expect(await solo.json(["whoami", "--json"]).first?["id"] as? String == solo.id)
            #expect(await solo.json(["history", "--room", "dev", "--json"]).count == 2)
            #expect(await solo.json(["tasks", "--room", "dev", "--json"]).map { $0["status"] as? String } == ["complete"])
            #expect(await solo.json(["digest", "--json"]).contains { $0["name"] as? String == "dev" })
            #expect(await solo.json(["peers", "--json"]).contains { $0["id"] as? String == friend.id && $0["state"] as? String == "linked" })
            let status = try #require(await solo.json(["status", "--json"]).first)
            let sync = try #require(status["sync"] as? [String: Any])
            for field in ["fetched", "wanted", "ops_received", "ops_sent", "peers"] { #expect(sync[field] != nil, "status lacks sync.\(field)") }
            let peer = try #require((sync["peers"] as? [[String: Any]])?.first)
            for field in ["id", "nick", "fetched", "wanted", "ops_received", "ops_sent", "bytes_received", "bytes_sent", "since"] {
                #expect(peer[field] != nil, "status lacks sync.peers[].\(field)")
            }
            let file = cluster.root + "/dev.parley"
            _ = await ok(["export", "--out", file, "--room", "dev"])
            #expect(await solo.json(["import", file, "--json"]).first?["applied"] as? Int == 0, "a node's own export holds nothing new")
            #expect(await solo.parley(["doctor"]).exitCode == 0)

            // What solo's commands wrote, friend holds: the room, the directory, the edit, the task.
            // (kitchen, joined and left by solo alone, is solo's only.)
            let same = await poll(timeout: .seconds(10)) { await sameDigests([solo, friend], rooms: ["dev", "lobby"]) }
            #expect(same, "\(cluster.logs)")
            let history = await friend.json(["history", "--room", "dev", "--json"])
            #expect(history.first?["text"] as? String == "hello from solo, edited" && history.first?["nick"] as? String == "solo")
            #expect(await friend.json(["tasks", "--room", "dev", "--json"]).map { $0["title"] as? String } == ["ship it"])
        }
    }
}
