import Foundation
import TestSupport
import Testing

/// A fork of bob's key (one identity.key in two data directories, both writing in #lobby)
/// reaches alice's node through export files; her people, status and doctor answers show it,
/// as the OpenAPI document says, and so does `parley status`.
@Suite struct ForkAPITests {
    @Test func peopleStatusAndDoctor_showAForkedPerson() async throws {
        var bob = ""
        let (directory, node) = try await APITests.startNode("forks") { alice in
            let desk = WebNode(name: "bob", in: alice.directory)
            try await desk.create(nick: "bob")
            bob = desk.id
            let copy = WebNode(name: "bob-copy", in: alice.directory)
            try FileManager.default.createDirectory(atPath: copy.dataDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try FileManager.default.copyItem(atPath: desk.dataDir + "/identity.key", toPath: copy.dataDir + "/identity.key")
            for (writer, text) in [(desk, "from the desk"), (copy, "from the copy")] {
                let file = alice.directory.path + "/\(writer.name).parley"
                for step in [["join", "lobby"], ["send", "--room", "lobby", text], ["export", "--out", file]] {
                    let result = await writer.parley(step)
                    try #require(result.exitCode == 0, "\(result)")
                }
                let imported = await alice.parley(["import", file])
                try #require(imported.exitCode == 0, "\(imported)")
            }
        }
        defer {
            node.kill()
            directory.remove()
        }
        let api = try APIClient(node: node)

        let people = try api.call("GET", "/api/people", expect: 200).array ?? []
        #expect(people.first { $0["id"] as? String == bob }?["forks"] as? Int == 1, "\(people)")
        #expect(people.first { $0["me"] as? Bool == true }?["forks"] as? Int == 0, "\(people)")

        let status = try api.call("GET", "/api/status", expect: 200).object ?? [:]
        let forks = status["forks"] as? [[String: Any]] ?? []
        try #require(forks.count == 1, "\(status)")
        #expect(forks[0]["kind"] as? String == "room" && forks[0]["name"] as? String == "#lobby", "\(forks)")
        #expect(forks[0]["author"] as? String == bob && forks[0]["person"] as? String == bob && forks[0]["seq"] as? Int == 1, "\(forks)")
        #expect((forks[0]["partition"] as? String)?.count == bob.count, "\(forks)")

        let doctor = try api.call("GET", "/api/doctor", expect: 200).object ?? [:]
        #expect((doctor["forks"] as? [[String: Any]])?.map { $0["author"] as? String } == [bob], "\(doctor)")

        let json = await node.parley(["status", "--json"])
        #expect(json.exitCode == 0 && json.stdout.contains("\"forks\"") && json.stdout.contains("\"#lobby\""), "\(json)")
        let text = await node.parley(["status"])
        #expect(text.stdout.contains("forks       1 chain frozen") && text.stdout.contains("forked in #lobby at seq 1"), "\(text)")
    }
}
