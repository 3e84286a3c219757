import Foundation
import Presentation
import Testing

/// `task`, `tasks`, `profile` and `digest`.
@Suite(.onCommandThreads) struct BoardAndDirectoryTests {
    @Test func taskAddSetDelete_areReflectedInTasksJSON() throws {
        try withSandbox { sandbox in
            let me = sandbox.initialize()
            let added = sandbox.parley("task", "add", "--room", "lobby", "order pizza")
            expectSuccess(added)
            let pizza = added.stdout.trimmingCharacters(in: .newlines)
            #expect(pizza.count == 52)
            let drinks = sandbox.parley("task", "add", "--room", "#lobby", "buy drinks", "--owner", "me").stdout
                .trimmingCharacters(in: .newlines)

            var tasks = sandbox.parley("tasks", "--room", "lobby", "--json").jsonArray()
            try #require(tasks.count == 2)
            #expect(tasks[0]["id"] as? String == pizza)
            #expect(tasks[0]["title"] as? String == "order pizza")
            #expect(tasks[0]["status"] as? String == "open")
            #expect(tasks[0]["owner"] is NSNull)
            #expect(tasks[1]["owner"] as? String == me)

            expectSuccess(sandbox.parley("task", "set", String(pizza.prefix(8)), "--status", "in-progress", "--owner", me))
            expectSuccess(sandbox.parley("task", "set", pizza, "--title=order two pizzas"))
            expectSuccess(sandbox.parley("task", "set", drinks, "--status", "complete", "--no-owner"))
            tasks = sandbox.parley("tasks", "--room", "lobby", "--json").jsonArray()
            #expect(tasks.map { $0["status"] as? String } == ["in-progress", "complete"])
            #expect(tasks[0]["title"] as? String == "order two pizzas")
            #expect(tasks[0]["owner"] as? String == me)
            #expect(tasks[1]["owner"] is NSNull)

            let board = sandbox.parley("tasks", "--room", "lobby")
            expectSuccess(board)
            #expect(board.stdout.contains("In progress (1)") && board.stdout.contains("order two pizzas"), "\(board)")

            expectSuccess(sandbox.parley("task", "delete", drinks))
            tasks = sandbox.parley("tasks", "--room", "lobby", "--json").jsonArray()
            #expect(tasks.map { $0["id"] as? String } == [pizza])
            expectError(sandbox.parley("task", "set", drinks, "--status", "open"), exitCode: 1, "no task with id")
        }
    }

    @Test func profile_setThenShow() throws {
        try withSandbox { sandbox in
            let me = sandbox.initialize(nick: "alice")
            expectSuccess(sandbox.parley("profile", "--display-name", "Alice Liddell", "--status", "at the tea party", "--presence", "away"))
            let shown = sandbox.parley("profile")
            expectSuccess(shown)
            #expect(
                shown.stdout.contains("Alice Liddell") && shown.stdout.contains("at the tea party") && shown.stdout.contains("away"),
                "\(shown)")
            let json = sandbox.parley("profile", "--json").jsonArray()
            #expect(json.first?["id"] as? String == me)
            #expect(json.first?["nick"] as? String == "alice")
            #expect(json.first?["display_name"] as? String == "Alice Liddell")
            #expect(json.first?["presence"] as? String == "away")
            // Setting one field leaves the others.
            expectSuccess(sandbox.parley("profile", "--presence", "online"))
            #expect(sandbox.parley("profile", "--json").jsonArray().first?["display_name"] as? String == "Alice Liddell")
        }
    }

    @Test func digestJSON_listsTheLobbyAndTheDirectory() throws {
        try withSandbox { sandbox in
            sandbox.initialize(nick: "alice")
            expectSuccess(sandbox.parley("send", "--room", "lobby", "one"))
            expectSuccess(sandbox.parley("send", "--room", "lobby", "two"))
            let run = sandbox.parley("digest", "--json")
            expectSuccess(run)
            let rows = run.jsonArray()
            for row in rows {
                #expect(Set(row.keys).isSuperset(of: ["partition", "kind", "name", "ops", "authors", "digest"]), "\(row)")
            }
            let lobby = try #require(rows.first { $0["kind"] as? String == "room" })
            #expect(lobby["name"] as? String == "lobby")
            #expect(lobby["ops"] as? Int == 2)
            #expect(lobby["authors"] as? Int == 1)
            #expect((lobby["digest"] as? String)?.count == 52)
            let directory = try #require(rows.first { $0["kind"] as? String == "directory" })
            #expect(directory["ops"] as? Int == 1)

            // The digest moves with every op, and only then.
            let again = sandbox.parley("digest", "--json").jsonArray().first { $0["kind"] as? String == "room" }
            #expect(again?["digest"] as? String == lobby["digest"] as? String)
            expectSuccess(sandbox.parley("send", "--room", "lobby", "three"))
            let after = sandbox.parley("digest", "--json").jsonArray().first { $0["kind"] as? String == "room" }
            #expect(after?["digest"] as? String != lobby["digest"] as? String)
        }
    }
}
