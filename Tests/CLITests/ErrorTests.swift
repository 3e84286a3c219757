import Foundation
import Testing

/// Bad input of every kind: one line on stderr, `parley: <problem>; <fix>`, exit 1 or 2, never
/// a crash (docs/DESIGN.md §6.1).
@Suite(.onCommandThreads) struct ErrorTests {
    /// Usage errors (exit 2) and failures (exit 1) on an initialized node.
    static let cases: [(arguments: [String], exitCode: Int32, fragment: String)] = [
        (["history", "--room", "nowhere"], 1, "you have not joined #nowhere"),
        (["history", "--room", "bad room"], 2, "is not a room name"),
        (["join", "a/b"], 2, "is not a room name"),
        (["send", "--room", "lobby", ""], 2, "message text is empty"),
        (["send", "--room", "lobby", "   "], 2, "message text is empty"),
        (["send", "--room", "lobby"], 2, "missing TEXT"),
        (["send", "hello"], 2, "missing --room"),
        (["send", "--room", "lobby", "--location", "north", "hi"], 2, "--location must be LAT,LON"),
        (["send", "--room", "lobby", "--location", "91,0", "hi"], 2, "off the globe"),
        (["send", "--room", "lobby", "--conversation", "x", "hi"], 2, "give --room or --conversation, not both"),
        (["send", "--room", "lobby", "--attach", "f", "hi"], 1, "cannot read f for --attach: no such file"),
        (["edit", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "x"], 1, "no message with id"),
        (["edit", "abcdefgh", "x"], 1, "no message id starts with abcdefgh"),
        (["edit", "not-an-id!", "x"], 2, "is not a message id"),
        (["delete", "abc"], 2, "too short"),
        (["react", "0123456789", "👍"], 2, "is not a message id"),
        (["history", "--room", "lobby", "--limit", "abc"], 2, "--limit must be a positive whole number"),
        (["history", "--room", "lobby", "--limit", "0"], 2, "--limit must be a positive whole number"),
        (["history", "--room", "lobby", "--limt", "3"], 2, "did you mean --limit"),
        (["history", "--room"], 2, "--room needs a value"),
        (["rooms", "--json=yes"], 2, "--json takes no value"),
        (["frobnicate"], 2, "unknown command 'frobnicate'"),
        (["histroy"], 2, "did you mean `parley history`"),
        (["task", "set", "abcdefgh", "--status", "bogus"], 2, "--status must be open, in-progress or complete"),
        (["task", "set", "abcdefgh"], 2, "nothing to change"),
        (["task", "add", "--room", "lobby", "t", "--owner", "bob"], 2, "--owner needs a user id"),
        (["task", "delete", "abcdefgh"], 1, "no task id starts with abcdefgh"),
        (["task", "frob"], 2, "unknown subcommand 'frob'"),
        (["task"], 2, "needs a subcommand"),
        (["profile", "--presence", "busy"], 2, "--presence must be online, away or hidden"),
        (["init", "--nick", "a b"], 2, "cannot contain spaces"),
        (["chat"], 1, "parley chat needs a terminal"),
        (["chat", "lobby", "dev"], 2, "unexpected argument 'dev'"),
        (["chat", "--discovery-port", "0"], 2, "--discovery-port must be a port"),
        ([], 2, "no command given"),
        (["sim", "--nodes", "1", "--out", "/tmp/never"], 2, "--nodes must be from 2 to 5000, not 1"),
        (["sim", "--nodes", "9", "--out", "/tmp/never", "--partition", "90-60"], 2, "--partition must be FROM-TO"),
        (["sim", "--nodes", "9", "--out", "/tmp/never", "--active-peers", "1"], 2, "--active-peers must be 0 (the full mesh) or from 2"),
    ]

    @Test func badInput_givesOneLineAndTheRightExitCode() throws {
        try withSandbox { sandbox in
            sandbox.initialize()
            for (arguments, exitCode, fragment) in Self.cases {
                let run = ParleyBinary.run(["--data-dir", sandbox.dataDir] + arguments, home: sandbox.root)
                expectError(run, exitCode: exitCode, fragment)
            }
        }
    }

    @Test func noIdentity_pointsToInit() throws {
        try withSandbox { sandbox in
            for command in [["whoami"], ["rooms"], ["send", "--room", "lobby", "hi"], ["digest"]] {
                let run = ParleyBinary.run(["--data-dir", sandbox.dataDir] + command, home: sandbox.root)
                expectError(run, exitCode: 1, "no identity in \(sandbox.dataDir); run `parley init --nick NAME` first")
            }
            #expect(!FileManager.default.fileExists(atPath: sandbox.dataDir), "a failing command must not create the data directory")
        }
    }

    @Test func dataDirectoryThatIsAFile_failsClearly() throws {
        try withSandbox { sandbox in
            let file = sandbox.write("plain-file", "not a directory")
            let whoami = ParleyBinary.run(["--data-dir", file, "whoami"], home: sandbox.root)
            expectError(whoami, exitCode: 1, "is a file, not a directory")
            let initInFile = ParleyBinary.run(["--data-dir", file, "init"], home: sandbox.root)
            expectError(initInFile, exitCode: 1, "is a file, not a directory")
            let underFile = ParleyBinary.run(["--data-dir", file + "/sub/dir", "init"], home: sandbox.root)
            expectError(underFile, exitCode: 1, "\(file) is a file, not a directory")
        }
    }

    /// A data directory the user may not write. Permissions do not stop root, so as root the
    /// commands run as `nobody` through `setpriv`.
    @Test func readOnlyDataDirectory_failsWithAFix() throws {
        let asRoot = geteuid() == 0
        let setpriv = "/usr/bin/setpriv"
        guard !asRoot || FileManager.default.isExecutableFile(atPath: setpriv) else { return }
        let launcher = asRoot ? [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"] : []
        try withSandbox { sandbox in
            try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: sandbox.root)
            func parley(_ arguments: String...) -> ParleyRun {
                ParleyBinary.run(["--data-dir", sandbox.dataDir] + arguments, home: sandbox.root, launcher: launcher)
            }
            expectSuccess(parley("init"))
            try FileManager.default.setAttributes([.posixPermissions: 0o500], ofItemAtPath: sandbox.dataDir)
            expectError(parley("send", "--room", "lobby", "hi"), exitCode: 1, "check that you may write to its directory")
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: sandbox.dataDir)
            let blocked = sandbox.root + "/blocked"
            try FileManager.default.createDirectory(atPath: blocked, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o500])
            let initBlocked = ParleyBinary.run(["--data-dir", blocked + "/data", "init"], home: sandbox.root, launcher: launcher)
            expectError(initBlocked, exitCode: 1, "cannot create the data directory \(blocked)/data: Permission denied")
        }
    }

    @Test func corruptedKeyFile_failsWithTheKeyFilesExplanation() throws {
        try withSandbox { sandbox in
            sandbox.initialize()
            let key = sandbox.dataDir + "/identity.key"
            _ = FileManager.default.createFile(atPath: key, contents: Data(repeating: 0x42, count: 89), attributes: [.posixPermissions: 0o600])
            expectError(sandbox.parley("whoami"), exitCode: 1, "the key file \(key) is damaged")
            expectError(sandbox.parley("init"), exitCode: 1, "is damaged")
            // Never overwritten, even by init.
            let after = try Data(contentsOf: URL(fileURLWithPath: key))
            #expect(after == Data(repeating: 0x42, count: 89))
        }
    }

    @Test func garbageDatabase_failsWithAFix() throws {
        try withSandbox { sandbox in
            sandbox.initialize()
            let database = sandbox.dataDir + "/parley.db"
            for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database + suffix) }
            _ = FileManager.default.createFile(atPath: database, contents: Data(repeating: 0x17, count: 8192))
            for command in [["rooms"], ["send", "--room", "lobby", "hi"], ["history", "--room", "lobby", "--json"]] {
                let run = ParleyBinary.run(["--data-dir", sandbox.dataDir] + command, home: sandbox.root)
                expectError(
                    run, exitCode: 1,
                    "the database \(database) is damaged or not a Parley database; save what is readable with `parley salvage --out FILE`, "
                        + "then move it away to start fresh (your identity is kept in identity.key)")
            }
        }
    }

    @Test func textStartingWithADash_isTextAfterDoubleDash() throws {
        try withSandbox { sandbox in
            sandbox.initialize()
            // Text that starts with a dash needs `--`; then it is text, not an option.
            let dashed = sandbox.parley("send", "--room", "lobby", "--", "--json", "-h")
            expectSuccess(dashed)
            let texts = sandbox.parley("history", "--room", "lobby", "--json").jsonArray().map { $0["text"] as? String }
            #expect(texts == ["--json -h"])
            expectError(sandbox.parley("send", "--room", "lobby", "-x"), exitCode: 2, "unknown option -x")
        }
    }
}
