import Foundation
import Testing

/// `parley export` on one node and `parley import` on a node that never linked to it give the
/// same digest for the exported partition (issue 4), and a damaged file is handled cleanly.
@Suite(.onCommandThreads) struct ArchiveCommandTests {
    func digest(_ sandbox: Sandbox, room: String) -> String? {
        sandbox.parley("digest", "--json").jsonArray().first { $0["kind"] as? String == "room" && $0["name"] as? String == room }?["digest"] as? String
    }

    @Test func exportThenImport_onAnUnlinkedNode_givesTheSameDigest() throws {
        try withSandbox { alice in
            try withSandbox { bob in
                alice.initialize(nick: "alice")
                bob.initialize(nick: "bob")
                let first = alice.parley("send", "--room", "lobby", "one").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                expectSuccess(alice.parley("send", "--room", "lobby", "two"))
                expectSuccess(alice.parley("edit", first, "one, edited"))
                expectSuccess(alice.parley("task", "add", "--room", "lobby", "carry the stick"))
                let file = alice.root + "/lobby.parley"
                let export = alice.parley("export", "--out", file, "--room", "lobby")
                expectSuccess(export)
                #expect(export.stdout.contains("exported 5 ops"))  // the room's 4 and the directory's 1

                let imported = bob.parley("import", file, "--json")
                expectSuccess(imported)
                #expect(imported.jsonArray().first?["applied"] as? Int == 5)  // 4 in the room + alice's profile
                #expect(digest(alice, room: "lobby") != nil)
                #expect(digest(alice, room: "lobby") == digest(bob, room: "lobby"))
                let history = bob.parley("history", "--room", "lobby", "--json").jsonArray()
                #expect(history.map { $0["text"] as? String } == ["one, edited", "two"])
                #expect(history.first?["nick"] as? String == "alice")

                // A second import changes nothing.
                let again = bob.parley("import", file, "--json")
                #expect(again.jsonArray().first?["applied"] as? Int == 0)
                #expect(again.jsonArray().first?["already_present"] as? Int == 5)
            }
        }
    }

    @Test func cutShortFile_importsWhatItHolds_andSaysSo() throws {
        try withSandbox { alice in
            try withSandbox { bob in
                alice.initialize()
                bob.initialize(nick: "bob")
                for i in 1...5 { expectSuccess(alice.parley("send", "--room", "lobby", "m\(i)")) }
                let file = alice.root + "/all.parley"
                expectSuccess(alice.parley("export", "--out", file))
                let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
                let cut = alice.root + "/cut.parley"
                try bytes.prefix(bytes.count - 100).write(to: URL(fileURLWithPath: cut))
                let run = bob.parley("import", cut)
                #expect(run.exitCode == 1)
                #expect(run.stderrLines.count == 1 && run.stderr.contains("cut short"), "\(run)")
                #expect(!run.stderr.contains("Fatal error"))
                // Importing the whole file afterwards completes the set.
                expectSuccess(bob.parley("import", file))
                #expect(digest(alice, room: "lobby") == digest(bob, room: "lobby"))
            }
        }
    }

    @Test func importOfSomethingElse_isRefusedWithTheReason() throws {
        try withSandbox { sandbox in
            sandbox.initialize()
            let notAnExport = sandbox.write("notes.txt", "hello")
            expectError(sandbox.parley("import", notAnExport), exitCode: 1, "not a Parley export file")
            expectError(sandbox.parley("import", sandbox.root + "/missing.parley"), exitCode: 1, "cannot read")
            expectError(sandbox.parley("export"), exitCode: 2, "missing --out")
            let existing = sandbox.write("exists.parley", "x")
            expectError(sandbox.parley("export", "--out", existing), exitCode: 1, "already exists")
        }
    }
}
