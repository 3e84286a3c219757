import Foundation
import Testing

/// Private conversations through the real binary: two identities in two data directories, with
/// ops carried between them by `parley export --conversation` / `parley import` (no network).
@Suite(.onCommandThreads) struct ConversationCommandTests {
    /// `export --conversation ID` on one node, `import` on another; expects success.
    func carry(_ conversation: String, from source: Sandbox, to target: Sandbox, sourceLocation: SourceLocation = #_sourceLocation) {
        let file = source.root + "/carry-\(UUID().uuidString).parley"
        expectSuccess(source.parley("export", "--out", file, "--conversation", conversation), sourceLocation: sourceLocation)
        expectSuccess(target.parley("import", file), sourceLocation: sourceLocation)
    }

    func digest(_ sandbox: Sandbox, _ conversation: String) -> String? {
        sandbox.parley("digest", "--json").jsonArray().first { $0["partition"] as? String == conversation }?["digest"] as? String
    }

    func line(_ run: ParleyRun) -> String { run.stdout.trimmingCharacters(in: .whitespacesAndNewlines) }

    @Test func twoMembers_talkThroughExportAndImport_withJSONShapes() throws {
        try withSandbox { alice in
            try withSandbox { bob in
                let aliceID = alice.initialize(nick: "alice")
                let bobID = bob.initialize(nick: "bob")
                let created = alice.parley("conversation", "create", "--name", "lab night", "--members", bobID)
                expectSuccess(created)
                let conversation = line(created)
                #expect(conversation.count == 52)
                let first = line(alice.parley("send", "--conversation", String(conversation.prefix(10)), "the", "key", "is", "under", "the", "mat"))
                #expect(first.count == 52)
                let note = alice.write("plan.txt", "step one: coffee")
                expectSuccess(alice.parley("send", "--conversation", conversation, "--attach", note))

                var listed = alice.parley("conversations", "--json").jsonArray()
                try #require(listed.count == 1)
                #expect(Set(listed[0].keys).isSuperset(of: ["id", "name", "members", "unread"]))
                #expect(listed[0]["id"] as? String == conversation)
                #expect(listed[0]["name"] as? String == "lab night")
                #expect(Set(listed[0]["members"] as? [String] ?? []) == [aliceID, bobID])
                #expect(listed[0]["unread"] as? Int == 0)

                carry(conversation, from: alice, to: bob)
                listed = bob.parley("conversations", "--json").jsonArray()
                #expect(listed.map { $0["name"] as? String } == ["lab night"])
                #expect(listed.first?["unread"] as? Int == 2)
                let history = bob.parley("history", "--conversation", conversation, "--json").jsonArray()
                #expect(history.map { $0["text"] as? String } == ["the key is under the mat", ""])
                #expect(history.first?["nick"] as? String == "alice")
                let attachment = try #require((history.last?["attachments"] as? [[String: Any]])?.first)
                #expect(attachment["name"] as? String == "plan.txt")
                #expect(attachment["size"] as? Int == 16)
                #expect(attachment["mime"] as? String == "text/plain")
                #expect((attachment["hash"] as? String)?.count == 64)

                expectSuccess(bob.parley("read", "--conversation", conversation))
                #expect(bob.parley("conversations", "--json").jsonArray().first?["unread"] as? Int == 0)
                let reply = line(bob.parley("send", "--conversation", conversation, "found it"))
                expectSuccess(bob.parley("react", first, "🔑"))
                let task = line(bob.parley("task", "add", "--conversation", conversation, "buy a better mat"))
                expectSuccess(bob.parley("conversation", "rename", conversation, "lab", "nights"))
                carry(conversation, from: bob, to: alice)

                expectSuccess(alice.parley("edit", first, "the key is under the plant"))
                let oops = line(alice.parley("send", "--conversation", conversation, "wrong chat"))
                expectSuccess(alice.parley("delete", oops))
                let aliceHistory = alice.parley("history", "--conversation", conversation, "--json").jsonArray()
                #expect(aliceHistory.map { $0["text"] as? String } == ["the key is under the plant", "", "found it", ""])
                #expect(aliceHistory.map { $0["deleted"] as? Bool } == [false, false, false, true])
                #expect(aliceHistory[2]["id"] as? String == reply)
                let text = alice.parley("history", "--conversation", conversation)
                #expect(text.stdout.contains("bob#") && text.stdout.contains("(message deleted)"), "\(text)")
                #expect((aliceHistory.first?["reactions"] as? [String: [String]])?["🔑"] == [bobID])
                let tasks = alice.parley("tasks", "--conversation", conversation, "--json").jsonArray()
                #expect(tasks.map { $0["id"] as? String } == [task])
                #expect(tasks.first?["title"] as? String == "buy a better mat")
                #expect(alice.parley("conversations", "--json").jsonArray().first?["name"] as? String == "lab nights")
                #expect(alice.parley("conversations", "--json").jsonArray().first?["unread"] as? Int == 1)
                let list = alice.parley("conversations")
                expectSuccess(list)
                #expect(list.stdout.contains("lab nights") && list.stdout.contains("bob#"), "\(list)")

                carry(conversation, from: alice, to: bob)
                #expect(digest(alice, conversation) != nil)
                #expect(digest(alice, conversation) == digest(bob, conversation))
            }
        }
    }

    @Test func removal_locksTheRemovedMemberOut_andACarrierReadsNothing() throws {
        try withSandbox { alice in
            try withSandbox { bob in
                try withSandbox { carol in
                    alice.initialize(nick: "alice")
                    let bobID = bob.initialize(nick: "bob")
                    carol.initialize(nick: "carol")
                    let conversation = line(alice.parley("conversation", "create", "--name", "secret society", "--members", bobID))
                    expectSuccess(alice.parley("send", "--conversation", conversation, "welcome, bob"))
                    carry(conversation, from: alice, to: bob)
                    expectSuccess(alice.parley("conversation", "remove", conversation, bobID))
                    expectSuccess(alice.parley("send", "--conversation", conversation, "bob is gone, the password is swordfish"))
                    carry(conversation, from: alice, to: bob)
                    // Bob keeps what he could read; the later message is not readable to him.
                    let bobs = bob.parley("history", "--conversation", conversation, "--json").jsonArray()
                    #expect(bobs.map { $0["text"] as? String } == ["welcome, bob"])
                    expectError(bob.parley("send", "--conversation", conversation, "hello?"), exitCode: 1, "you are not a member of conversation")
                    #expect(bob.parley("conversations", "--json").jsonArray().first?["member"] as? Bool == false)
                    #expect(digest(alice, conversation) == digest(bob, conversation))

                    // Carol was never a member: she carries the ciphertext and reads nothing.
                    carry(conversation, from: alice, to: carol)
                    #expect(digest(carol, conversation) == digest(alice, conversation))
                    expectError(
                        carol.parley("history", "--conversation", conversation), exitCode: 1, "you are not a member of conversation")
                    #expect(carol.parley("conversations", "--json").jsonArray().isEmpty)
                    let database =
                        try Data(contentsOf: URL(fileURLWithPath: carol.dataDir + "/parley.db"))
                        + ((try? Data(contentsOf: URL(fileURLWithPath: carol.dataDir + "/parley.db-wal"))) ?? Data())
                    for secret in ["swordfish", "welcome, bob", "secret society"] {
                        #expect(database.range(of: Data(secret.utf8)) == nil, "carol's database holds '\(secret)'")
                    }
                }
            }
        }
    }

    @Test func leave_takesTheConversationOffTheList() throws {
        try withSandbox { alice in
            try withSandbox { bob in
                let bobID = bob.initialize(nick: "bob")
                let aliceID = alice.initialize(nick: "alice")
                let conversation = line(alice.parley("conversation", "create", "--name", "pair", "--members", bobID))
                carry(conversation, from: alice, to: bob)
                let added = alice.parley("conversation", "add", conversation, bobID)
                expectSuccess(added)
                #expect(added.stdout.contains("already a member"))
                let left = bob.parley("conversation", "leave", conversation)
                expectSuccess(left)
                #expect(left.stdout.contains("left 'pair'"))
                #expect(bob.parley("conversations", "--json").jsonArray().isEmpty)
                expectError(bob.parley("conversation", "leave", conversation), exitCode: 1, "you are not a member")
                carry(conversation, from: bob, to: alice)
                #expect(alice.parley("conversations", "--json").jsonArray().first?["members"] as? [String] == [aliceID])
            }
        }
    }

    @Test func badInput_isRefusedWithOneLine() throws {
        try withSandbox { alice in
            try withSandbox { bob in
                let bobID = bob.initialize(nick: "bob")
                alice.initialize(nick: "alice")
                let conversation = line(alice.parley("conversation", "create", "--name", "x", "--members", bobID))
                let big = alice.root + "/big.bin"
                _ = FileManager.default.createFile(atPath: big, contents: Data(count: 8 * 1024 * 1024 + 1))
                let unknownID = String(repeating: "a", count: 52)
                let cases: [([String], Int32, String)] = [
                    (["conversation", "create", "--name", " ", "--members", bobID], 2, "the conversation name is empty"),
                    (["conversation", "create", "--members", bobID], 2, "missing --name"),
                    (["conversation", "create", "--name", "x"], 2, "missing --members"),
                    (["conversation", "create", "--name", "x", "--members", "nobody"], 1, "unknown user 'nobody'"),
                    (["conversation", "add", conversation, "zzzzzzzz"], 1, "unknown user"),
                    (["conversation", "add", unknownID, bobID], 1, "no conversation with id"),
                    (["conversation", "add", "short", bobID], 2, "is not a conversation id"),
                    (["conversation", "add", conversation, unknownID], 2, "is not a valid user id"),
                    (["conversation", "rename", conversation, "  "], 2, "the conversation name is empty"),
                    (["conversation", "frob"], 2, "unknown subcommand 'frob'"),
                    (["send", "--conversation", unknownID, "hi"], 1, "no conversation with id"),
                    (["history", "--conversation", "not-an-id!"], 2, "is not a conversation id"),
                    (["send", "--conversation", conversation, "--attach", big], 1, "over the 8.0 MiB limit for --attach"),
                    (["send", "--conversation", conversation, "--attach", alice.root + "/missing.png"], 1, "no such file"),
                    (["send", "--conversation", conversation, "--attach", alice.root], 1, "is a directory"),
                    (["profile", "--avatar", big], 1, "over the 8.0 MiB limit for --avatar"),
                    (["tasks", "--room", "lobby", "--conversation", conversation], 2, "not both"),
                    (["export", "--out", alice.root + "/x.parley", "--conversation", unknownID], 1, "no conversation with id"),
                    (["attachment", "abcdefgh"], 2, "missing --out"),
                ]
                for (arguments, exitCode, fragment) in cases {
                    expectError(alice.parley(arguments), exitCode: exitCode, fragment)
                }
                // Only the creator removes; bob (a member) cannot.
                carry(conversation, from: alice, to: bob)
                expectError(bob.parley("conversation", "remove", conversation, "alice"), exitCode: 1, "only the conversation's creator")
                expectError(alice.parley("conversation", "remove", conversation, "me"), exitCode: 1, "conversation leave")
            }
        }
    }
}

extension Sandbox {
    /// `parley --data-dir <dataDir> arguments` with the arguments as an array.
    func parley(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) -> ParleyRun {
        ParleyBinary.run(["--data-dir", dataDir] + arguments, home: root, sourceLocation: sourceLocation)
    }
}
