import Foundation
import Testing

/// `parley join NAME --room-passphrase-file F`, the global `--passphrase-file` that is not a
/// room's, and `room passphrase` (issue 40, docs/DESIGN.md §6.1).
@Suite(.onCommandThreads) struct PrivateRoomCommandTests {
    @Test func joinWithARoomPassphrase_makesAPrivateRoom_thatSendAndHistoryFindByName() throws {
        try withSandbox { sandbox in
            sandbox.initialize()
            let pass = sandbox.write("ops.pass", "correct horse battery staple\n")
            let joined = sandbox.parley("join", "#Ops", "--room-passphrase-file", pass)
            expectSuccess(joined)
            #expect(joined.stdoutLines == ["joined private room #ops"])
            #expect(sandbox.parley("join", "ops", "--room-passphrase-file", pass).stdoutLines == ["already in private room #ops"])
            expectSuccess(sandbox.parley("send", "--room", "ops", "meet at the north door"))
            let history = sandbox.parley("history", "--room", "#OPS", "--json").jsonArray()
            #expect(history.compactMap { $0["text"] as? String } == ["meet at the north door"])
            let rooms = sandbox.parley("rooms", "--json").jsonArray()
            #expect(rooms.contains { $0["name"] as? String == "ops" && $0["private"] as? Bool == true })
            #expect(rooms.contains { $0["name"] as? String == "lobby" && $0["private"] as? Bool == false })
            #expect(sandbox.parley("rooms").stdoutLines.contains("#ops (private)"))
            // The public room of the same name is another room: nothing of the private one there.
            expectSuccess(sandbox.parley("leave", "ops"))
            expectSuccess(sandbox.parley("join", "ops"))
            #expect(sandbox.parley("history", "--room", "ops", "--json").jsonArray().isEmpty)
        }
    }

    @Test func theGlobalPassphraseFileOnJoin_saysTheRoomIsPublic() throws {
        try withSandbox { sandbox in
            let identityPass = sandbox.write("id.pass", "my identity passphrase\n")
            expectSuccess(sandbox.parley("init", "--nick", "alice", "--passphrase-file", identityPass))
            for arguments in [["--passphrase-file", identityPass, "join", "team"], ["join", "crew", "--passphrase-file", identityPass]] {
                let run = sandbox.parley(arguments)
                #expect(run.exitCode == 0 && run.stdoutLines.first?.hasPrefix("joined #") == true, "\(run)")
                #expect(run.stderrLines.count == 1, "\(run)")
                #expect(run.stderrLines.first?.contains("is a public room") == true, "\(run)")
                #expect(run.stderrLines.first?.contains("--room-passphrase-file") == true, "\(run)")
            }
            let rooms = sandbox.parley("--passphrase-file", identityPass, "rooms", "--json").jsonArray()
            #expect(rooms.filter { $0["private"] as? Bool == false }.compactMap { $0["name"] as? String }.sorted() == ["crew", "lobby", "team"])
        }
    }

    @Test func aMissingOrWeakRoomPassphraseFile_isOneLineNamingTheFix() throws {
        try withSandbox { sandbox in
            sandbox.initialize()
            expectError(
                sandbox.parley("join", "ops", "--room-passphrase-file", sandbox.root + "/nope.pass"), exitCode: 1,
                "cannot read the room passphrase file")
            let short = sandbox.write("short.pass", "abc\n")
            expectError(sandbox.parley("join", "ops", "--room-passphrase-file", short), exitCode: 1, "at least 8 bytes; write a longer one in it")
            let empty = sandbox.write("empty.pass", "")
            expectError(sandbox.parley("join", "ops", "--room-passphrase-file", empty), exitCode: 1, "at least 8 bytes")
            expectError(sandbox.parley("join", "ops", "--room-passphrase-file"), exitCode: 2, "--room-passphrase-file needs a value")
            let pass = sandbox.write("ops.pass", "correct horse battery staple\n")
            expectError(
                sandbox.parley("room", "passphrase", "ops", "--new-room-passphrase-file", pass), exitCode: 1, "you hold no private room #ops")
            expectSuccess(sandbox.parley("join", "ops", "--room-passphrase-file", pass))
            expectError(
                sandbox.parley("room", "passphrase", "ops", "--new-room-passphrase-file", pass), exitCode: 1, "the new passphrase is the room's current one")
            #expect(sandbox.parley("rooms", "--json").jsonArray().filter { $0["private"] as? Bool == true }.count == 1)
        }
    }

    @Test func exportByName_carriesThePrivateRoomsCiphertext_readableOnlyAfterJoiningWithThePassphrase() throws {
        try withSandbox { sandbox in
            sandbox.initialize()
            let pass = sandbox.write("ops.pass", "correct horse battery staple\n")
            expectSuccess(sandbox.parley("join", "lantern-watch", "--room-passphrase-file", pass))
            expectSuccess(sandbox.parley("send", "--room", "lantern-watch", "north door at ten"))
            let file = sandbox.root + "/watch.parley"
            expectSuccess(sandbox.parley("export", "--out", file, "--room", "lantern-watch"))
            let exported = try #require(FileManager.default.contents(atPath: file))
            #expect(exported.range(of: Data("north door".utf8)) == nil && exported.range(of: Data("lantern-watch".utf8)) == nil)
            let other = Sandbox(root: sandbox.root + "/bob")
            try FileManager.default.createDirectory(atPath: other.root, withIntermediateDirectories: true)
            other.initialize(nick: "bob")
            expectSuccess(other.parley("import", file))
            #expect(other.parley("rooms", "--json").jsonArray().allSatisfy { $0["private"] as? Bool == false })
            expectSuccess(other.parley("join", "lantern-watch", "--room-passphrase-file", pass))
            #expect(other.parley("history", "--room", "lantern-watch", "--json").jsonArray().compactMap { $0["text"] as? String } == ["north door at ten"])
        }
    }

    /// `room passphrase --no-history`: bob, who joins with the new passphrase only, reads what
    /// follows the change; alice, who held both, reads everything.
    @Test func aPassphraseChangeWithoutHistory_isReadFromTheChangeOnByNewJoiners() throws {
        try withSandbox { sandbox in
            sandbox.initialize()
            let (old, new) = (sandbox.write("old.pass", "correct horse battery staple\n"), sandbox.write("new.pass", "a much newer passphrase\n"))
            expectSuccess(sandbox.parley("join", "vault", "--room-passphrase-file", old))
            expectSuccess(sandbox.parley("send", "--room", "vault", "before the change"))
            let changed = sandbox.parley("room", "passphrase", "vault", "--new-room-passphrase-file", new, "--no-history")
            expectSuccess(changed)
            #expect(changed.stdout.contains("those who join with the new one cannot read what came before"), "\(changed)")
            expectSuccess(sandbox.parley("send", "--room", "vault", "after the change"))
            let file = sandbox.root + "/vault.parley"
            expectSuccess(sandbox.parley("export", "--out", file))
            let bob = Sandbox(root: sandbox.root + "/bob")
            try FileManager.default.createDirectory(atPath: bob.root, withIntermediateDirectories: true)
            bob.initialize(nick: "bob")
            expectSuccess(bob.parley("join", "vault", "--room-passphrase-file", new))
            expectSuccess(bob.parley("import", file))
            func texts(_ who: Sandbox) -> [String] {
                who.parley("history", "--room", "vault", "--json").jsonArray().compactMap { $0["text"] as? String }
            }
            #expect(texts(bob) == ["after the change"])
            #expect(texts(sandbox).first == "before the change" && texts(sandbox).last == "after the change")
        }
    }
}
