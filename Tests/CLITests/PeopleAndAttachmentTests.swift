import Foundation
import Testing

/// `people`, `profile --avatar` and `attachment` through the real binary.
@Suite(.onCommandThreads) struct PeopleAndAttachmentTests {
    @Test func people_listsTheDirectory_withPresenceAndTheJSONShape() throws {
        try withSandbox { alice in
            try withSandbox { bob in
                let aliceID = alice.initialize(nick: "alice")
                let bobID = bob.initialize(nick: "bob")
                expectSuccess(bob.parley("profile", "--display-name", "Bob Builder", "--status", "fixing the boiler", "--presence", "away"))
                let file = bob.root + "/directory.parley"
                expectSuccess(bob.parley("export", "--out", file))
                expectSuccess(alice.parley("import", file))
                expectSuccess(alice.parley("profile", "--presence", "away"))

                let people = alice.parley("people", "--json").jsonArray()
                try #require(people.count == 2)
                for person in people {
                    #expect(Set(person.keys).isSuperset(of: ["id", "nick", "display_name", "status", "presence", "last_seen"]), "\(person)")
                    #expect(person["last_seen"] is NSNull)
                }
                #expect(people[0]["id"] as? String == aliceID)
                #expect(people[0]["me"] as? Bool == true)
                #expect(people[0]["presence"] as? String == "away")  // your own chosen mode
                #expect(people[1]["id"] as? String == bobID)
                #expect(people[1]["display_name"] as? String == "Bob Builder")
                #expect(people[1]["status"] as? String == "fixing the boiler")
                #expect(people[1]["presence"] as? String == "offline")  // no node: others are offline

                #expect(alice.parley("people", "--search", "BOILER", "--json").jsonArray().map { $0["id"] as? String } == [bobID])
                #expect(alice.parley("people", "--search", String(bobID.prefix(5)), "--json").jsonArray().count == 1)
                #expect(alice.parley("people", "--search", "nobody-has-this", "--json").jsonArray().isEmpty)
                let text = alice.parley("people")
                expectSuccess(text)
                #expect(text.stdout.contains("bob#") && text.stdout.contains("Bob Builder") && text.stdout.contains("(you)"), "\(text)")

                // A member may be named by nick#short or an id prefix from the directory.
                let byNick = alice.parley("conversation", "create", "--name", "builders", "--members", "bob#" + String(bobID.prefix(6)))
                expectSuccess(byNick)
                let byPrefix = alice.parley("conversation", "create", "--name", "builders 2", "--members", String(bobID.prefix(6)))
                expectSuccess(byPrefix)
            }
        }
    }

    @Test func avatar_isRecordedInTheProfile_andItsContentKept() throws {
        try withSandbox { sandbox in
            sandbox.initialize(nick: "alice")
            let picture = sandbox.root + "/me.png"
            let bytes = Data((0..<3000).map { UInt8($0 % 251) })
            try bytes.write(to: URL(fileURLWithPath: picture))
            expectSuccess(sandbox.parley("profile", "--avatar", picture))
            let profile = try #require(sandbox.parley("profile", "--json").jsonArray().first)
            let avatar = try #require(profile["avatar"] as? [String: Any])
            #expect(avatar["name"] as? String == "me.png")
            #expect(avatar["size"] as? Int == 3000)
            #expect(avatar["mime"] as? String == "image/png")
            #expect((avatar["hash"] as? String)?.count == 64)
            #expect((sandbox.parley("people", "--json").jsonArray().first?["avatar"] as? [String: Any])?["name"] as? String == "me.png")
            let shown = sandbox.parley("profile")
            #expect(shown.stdout.contains("me.png (image/png"), "\(shown)")
        }
    }

    @Test func attachment_writesTheFile_whenItsContentIsHere() throws {
        try withSandbox { alice in
            try withSandbox { bob in
                alice.initialize(nick: "alice")
                bob.initialize(nick: "bob")
                let content = "GRID 41-17\nthe cave behind the waterfall\n"
                let map = alice.write("map.txt", content)
                let notes = alice.write("notes.md", "# notes")
                let id = alice.parley("send", "--room", "lobby", "--attach", map, "--attach", notes, "the map")
                    .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                let out = alice.root + "/copy.txt"
                let written = alice.parley("attachment", id, "--out", out)
                expectSuccess(written)
                #expect(written.stdout.contains("wrote map.txt"))
                let copied = try String(contentsOfFile: out, encoding: .utf8)
                #expect(copied == content)
                expectError(alice.parley("attachment", id, "--out", out), exitCode: 1, "already exists")
                expectSuccess(alice.parley("attachment", id, "2", "--out", out, "--force"))
                let second = try String(contentsOfFile: out, encoding: .utf8)
                #expect(second == "# notes")
                expectError(alice.parley("attachment", id, "3", "--out", out), exitCode: 1, "has 2 attachment(s)")
                expectError(alice.parley("attachment", id, "zero", "--out", out), exitCode: 2, "INDEX must be 1 or more")
                let plain = alice.parley("send", "--room", "lobby", "no files").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                expectError(alice.parley("attachment", plain, "--out", out), exitCode: 1, "has no attachment")

                // Without its files an export carries the message, not the content.
                let file = alice.root + "/lobby.parley"
                expectSuccess(alice.parley("export", "--out", file, "--room", "lobby", "--no-files"))
                expectSuccess(bob.parley("import", file))
                expectError(bob.parley("attachment", id, "--out", bob.root + "/map.txt"), exitCode: 1, "not fetched yet")

                // With them (the default) the content travels too, and the avatar.
                expectSuccess(alice.parley("profile", "--avatar", alice.write("me.png", "not really a png")))
                let withFiles = alice.root + "/lobby-files.parley"
                let export = alice.parley("export", "--out", withFiles, "--room", "lobby")
                expectSuccess(export)
                #expect(export.stdout.contains("and 3 files"), "\(export)")
                let imported = bob.parley("import", withFiles, "--json")
                expectSuccess(imported)
                #expect(imported.jsonArray().first?["blobs"] as? Int == 3, "\(imported)")
                expectSuccess(bob.parley("attachment", id, "--out", bob.root + "/map.txt"))
                #expect(try String(contentsOfFile: bob.root + "/map.txt", encoding: .utf8) == content)
                let again = bob.parley("import", withFiles)
                #expect(again.stdout.contains("and 3 files"), "\(again)")
            }
        }
    }
}
