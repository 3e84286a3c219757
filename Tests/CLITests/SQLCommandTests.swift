import Foundation
import Testing

/// `parley sql` and the readable views of docs/SCHEMA.md, through the real binary: the views are
/// a contract, so every documented column is queried here, and every example query of the doc runs.
@Suite(.onCommandThreads) struct SQLCommandTests {
    func sql(_ sandbox: Sandbox, _ query: String, sourceLocation: SourceLocation = #_sourceLocation) -> [[String: Any]] {
        let run = sandbox.parley("sql", "--json", query)
        expectSuccess(run, sourceLocation: sourceLocation)
        return run.jsonArray(sourceLocation: sourceLocation)
    }

    func line(_ run: ParleyRun) -> String { run.stdout.trimmingCharacters(in: .whitespacesAndNewlines) }

    @Test func theViews_showWhatTheCommandsShow_inReadableColumns() throws {
        try withSandbox { alice in
            try withSandbox { bob in
                let aliceID = alice.initialize(nick: "alice")
                let bobID = bob.initialize(nick: "bob")
                expectSuccess(alice.parley("profile", "--display-name", "Alice Liddell", "--presence", "away"))
                let first = line(alice.parley("send", "--room", "lobby", "first words"))
                expectSuccess(alice.parley("edit", first, "first words, edited"))
                let gone = line(alice.parley("send", "--room", "lobby", "to be deleted"))
                expectSuccess(alice.parley("delete", gone))
                expectSuccess(alice.parley("react", first, "👍"))
                let task = alice.parley("task", "add", "--room", "lobby", "carry the rope", "--owner", "me")
                expectSuccess(task)
                expectSuccess(alice.parley("task", "set", line(task), "--status", "in-progress"))
                let conversation = line(alice.parley("conversation", "create", "--name", "pair", "--members", bobID))
                expectSuccess(alice.parley("send", "--conversation", conversation, "just us"))

                let history = alice.parley("history", "--room", "lobby", "--json").jsonArray()
                let messages = sql(alice, "SELECT * FROM v_messages ORDER BY hlc")
                #expect(messages.map { $0["text"] as? String } == ["first words, edited", "", "just us"])
                #expect(messages.map { $0["place"] as? String } == ["lobby", "lobby", "pair"])
                #expect(messages.map { $0["kind"] as? String } == ["room", "room", "conversation"])
                #expect(messages.map { $0["edited"] as? Int } == [1, 0, 0])
                #expect(messages.map { $0["deleted"] as? Int } == [0, 1, 0])
                #expect(messages.allSatisfy { $0["nick"] as? String == "alice" && $0["author"] as? String == aliceID })
                #expect(messages.first?["id"] as? String == history.first?["id"] as? String)
                #expect(messages.first?["time"] as? String == history.first?["time"] as? String, "\(messages) \(history)")
                #expect(messages.first?["attachments"] as? Int == 0 && messages.first?["seq"] as? Int == 1)

                let reactions = sql(alice, "SELECT message, place, nick, emoji FROM v_reactions")
                #expect(reactions.count == 1 && reactions.first?["emoji"] as? String == "👍" && reactions.first?["message"] as? String == first)

                let tasks = sql(alice, "SELECT title, status, owner, owner_nick, creator, created, deleted, place FROM v_tasks")
                #expect(tasks.count == 1)
                #expect(tasks.first?["title"] as? String == "carry the rope" && tasks.first?["status"] as? String == "in-progress")
                #expect(tasks.first?["owner"] as? String == aliceID && tasks.first?["owner_nick"] as? String == "alice")
                #expect(tasks.first?["creator"] as? String == aliceID && tasks.first?["deleted"] as? Int == 0)
                #expect((tasks.first?["created"] as? String)?.hasSuffix("Z") == true)

                let people = sql(alice, "SELECT * FROM v_people")
                #expect(people.count == 1 && people.first?["display_name"] as? String == "Alice Liddell")
                #expect(people.first?["presence_mode"] as? String == "away" && people.first?["has_avatar"] as? Int == 0)

                let partitions = sql(alice, "SELECT kind, name, joined FROM v_partitions WHERE kind IN ('room', 'conversation') ORDER BY kind")
                #expect(partitions.map { "\($0["kind"]!) \($0["name"]!) \($0["joined"]!)" } == ["conversation pair 1", "room lobby 1"])

                let members = sql(alice, "SELECT name, user, current FROM v_members ORDER BY user")
                #expect(Set(members.compactMap { $0["user"] as? String }) == [aliceID, bobID])
                #expect(members.allSatisfy { $0["name"] as? String == "pair" && $0["current"] as? Int == 1 })

                // Text output: a header, then aligned columns.
                let text = alice.parley("sql", "SELECT nick, text FROM v_messages WHERE kind = 'room' ORDER BY hlc")
                expectSuccess(text)
                #expect(text.stdout == "nick   text\nalice  first words, edited\nalice  \n")
            }
        }
    }

    @Test func writes_areRefused_andErrorsAreOneLine() throws {
        try withSandbox { sandbox in
            sandbox.initialize()
            expectSuccess(sandbox.parley("send", "--room", "lobby", "keep me"))
            let before = sandbox.parley("digest").stdout
            expectError(sandbox.parley("sql", "DELETE FROM ops"), exitCode: 1, "only reads")
            expectError(sandbox.parley("sql", "DROP VIEW v_messages"), exitCode: 1, "only reads")
            expectError(sandbox.parley("sql", "SELEC 1"), exitCode: 1, "syntax error")
            expectError(sandbox.parley("sql", "SELECT x FROM nowhere"), exitCode: 1, "no such table")
            expectError(sandbox.parley("sql", "  ;  "), exitCode: 2, "no SQL statement")
            #expect(sandbox.parley("digest").stdout == before)
            #expect(sql(sandbox, "SELECT text FROM v_messages").first?["text"] as? String == "keep me")
        }
    }

    @Test func statementsFromStandardInput_runInOrder() throws {
        try withSandbox { sandbox in
            sandbox.initialize()
            expectSuccess(sandbox.parley("send", "--room", "lobby", "one"))
            let binary = try #require(ParleyBinary.path)
            let run = Tool.run(
                "/bin/sh",
                ["-c", "printf 'SELECT 1 AS one;\\nSELECT count(*) AS n\\n  FROM v_messages;\\n' | '\(binary)' --data-dir '\(sandbox.dataDir)' sql"],
                in: sandbox.root)
            #expect(run.status == 0 && run.stderr.isEmpty, "\(run)")
            #expect(run.stdout == "one\n1\nn\n1\n")
        }
    }

    /// Every ```sql block of docs/SCHEMA.md runs without an error on a store with data.
    @Test func theDocumentsExampleQueries_run() throws {
        let doc = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/SCHEMA.md")
        let text = try String(contentsOf: doc, encoding: .utf8)
        let blocks = text.components(separatedBy: "```sql\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
        #expect(blocks.count >= 3)
        try withSandbox { sandbox in
            sandbox.initialize()
            expectSuccess(sandbox.parley("send", "--room", "lobby", "one"))
            expectSuccess(sandbox.parley("task", "add", "--room", "lobby", "a task"))
            for block in blocks {
                let run = sandbox.parley("sql", "--json", block)
                expectSuccess(run)
                #expect(run.stdout.hasPrefix("["), "\(block)")
            }
        }
    }
}
