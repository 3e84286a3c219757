import Foundation
import Testing

/// `init`, `whoami` and the data directory: the first things a user and a script meet.
@Suite(.onCommandThreads) struct IdentityCommandTests {
    @Test func init_twice_keepsTheSameKeyAndPrintsTheID() throws {
        try withSandbox { sandbox in
            let first = sandbox.parley("init", "--nick", "alice")
            expectSuccess(first)
            let id = first.stdout.trimmingCharacters(in: .newlines)
            #expect(id.count == 52 && id.allSatisfy { ("a"..."z").contains($0) || ("2"..."7").contains($0) }, "\(first)")
            #expect(first.stdoutLines == [id])
            let keyPath = sandbox.dataDir + "/identity.key"
            let keyBefore = try Data(contentsOf: URL(fileURLWithPath: keyPath))

            let second = sandbox.parley("init", "--nick", "alice")
            expectSuccess(second)
            #expect(second.stdoutLines == [id])
            #expect(try Data(contentsOf: URL(fileURLWithPath: keyPath)) == keyBefore)
        }
    }

    @Test func init_createsPrivateDirectoryAndKeyFile() throws {
        try withSandbox { sandbox in
            sandbox.initialize()
            let fileManager = FileManager.default
            let directoryMode = try fileManager.attributesOfItem(atPath: sandbox.dataDir)[.posixPermissions] as? Int
            let keyMode = try fileManager.attributesOfItem(atPath: sandbox.dataDir + "/identity.key")[.posixPermissions] as? Int
            #expect(directoryMode == 0o700)
            #expect(keyMode == 0o600)
            #expect(fileManager.fileExists(atPath: sandbox.dataDir + "/parley.db"))
        }
    }

    /// Group and other permission bits of the data directory and of every file in it.
    func looseModes(_ directory: String) throws -> [String: Int] {
        let fileManager = FileManager.default
        var loose: [String: Int] = [:]
        for path in [directory] + (try fileManager.contentsOfDirectory(atPath: directory)).map({ directory + "/" + $0 }) {
            let mode = (try fileManager.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? 0
            if mode & 0o077 != 0 { loose[path] = mode }
        }
        return loose
    }

    @Test func init_intoAnExistingOpenDirectory_makesItAndEveryFileInItPrivate() throws {
        try withSandbox { sandbox in
            try FileManager.default.createDirectory(atPath: sandbox.dataDir, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
            sandbox.initialize()
            expectSuccess(sandbox.parley("send", "--room", "lobby", "words for nobody else"))
            let loose = try looseModes(sandbox.dataDir)
            #expect(loose.isEmpty, "\(loose)")

            // A directory and a store made loose behind Parley's back (a restored backup): doctor
            // names them with the fix, and the next command that writes tightens them.
            let database = sandbox.dataDir + "/parley.db"
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: sandbox.dataDir)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: database)
            let doctor = sandbox.parley("doctor")
            #expect(doctor.stdout.contains("\(sandbox.dataDir) is mode 755"), "\(doctor)")
            #expect(doctor.stdout.contains("\(database) is mode 644"), "\(doctor)")
            #expect(doctor.stdout.contains("chmod 600 \(database)"), "\(doctor)")
            expectSuccess(sandbox.parley("send", "--room", "lobby", "more words"))
            let tightened = try looseModes(sandbox.dataDir)
            #expect(tightened.isEmpty, "\(tightened)")
        }
    }

    @Test func whoami_json_showsIDNickDisplayAndDataDir() throws {
        try withSandbox { sandbox in
            let id = sandbox.initialize(nick: "alice")
            let run = sandbox.parley("whoami", "--json")
            expectSuccess(run)
            let objects = run.jsonArray()
            #expect(objects.count == 1)
            #expect(objects.first?["id"] as? String == id)
            #expect(objects.first?["nick"] as? String == "alice")
            #expect(objects.first?["display"] as? String == "alice#" + id.prefix(6))
            #expect(objects.first?["data_dir"] as? String == sandbox.dataDir)

            let text = sandbox.parley("whoami")
            expectSuccess(text)
            #expect(text.stdoutLines.first == "alice#" + id.prefix(6))
        }
    }

    @Test func init_withNewNick_changesTheNickButNotTheKey() throws {
        try withSandbox { sandbox in
            let id = sandbox.initialize(nick: "alice")
            #expect(sandbox.initialize(nick: "alicia") == id)
            #expect(sandbox.parley("whoami", "--json").jsonArray().first?["nick"] as? String == "alicia")
        }
    }

    @Test func dataDirectory_comesFromTheEnvironmentWhenNoOptionIsGiven() throws {
        try withSandbox { sandbox in
            let fromParleyVariable = sandbox.root + "/env-dir"
            let created = sandbox.parleyRaw(["init"], environment: ["PARLEY_DATA_DIR": fromParleyVariable])
            expectSuccess(created)
            #expect(FileManager.default.fileExists(atPath: fromParleyVariable + "/identity.key"))

            let xdg = sandbox.parleyRaw(["init"], environment: ["XDG_DATA_HOME": sandbox.root + "/xdg"])
            expectSuccess(xdg)
            #expect(FileManager.default.fileExists(atPath: sandbox.root + "/xdg/parley/identity.key"))

            let home = sandbox.parleyRaw(["init"])
            expectSuccess(home)
            #expect(FileManager.default.fileExists(atPath: sandbox.root + "/.local/share/parley/identity.key"))

            // The option wins over the environment, and works after the command too.
            let option = sandbox.parleyRaw(
                ["whoami", "--json", "--data-dir", fromParleyVariable],
                environment: ["PARLEY_DATA_DIR": sandbox.root + "/elsewhere"])
            expectSuccess(option)
            #expect(option.jsonArray().first?["id"] as? String == created.stdout.trimmingCharacters(in: .newlines))
        }
    }

    @Test func passphraseFile_protectsTheKey() throws {
        try withSandbox { sandbox in
            let passphrase = sandbox.write("pass", "correct horse\n")
            let created = sandbox.parley("init", "--nick", "carol", "--passphrase-file", passphrase)
            expectSuccess(created)
            let id = created.stdout.trimmingCharacters(in: .newlines)

            expectError(sandbox.parley("whoami"), exitCode: 1, "protected by a passphrase")
            expectError(sandbox.parley("whoami", environment: ["PARLEY_PASSPHRASE": "wrong"]), exitCode: 1, "does not unlock")
            let withFile = sandbox.parley("--passphrase-file", passphrase, "whoami", "--json")
            expectSuccess(withFile)
            #expect(withFile.jsonArray().first?["id"] as? String == id)
            let withVariable = sandbox.parley("whoami", "--json", environment: ["PARLEY_PASSPHRASE": "correct horse"])
            #expect(withVariable.jsonArray().first?["id"] as? String == id)
        }
    }
}
