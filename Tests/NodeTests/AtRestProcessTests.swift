import Foundation
import Identity
import SQLite
import Store
import TestSupport
import Testing

/// The store at rest and panic wipe (issue 40 item 5, docs/DESIGN.md §5.1), with real `parley
/// run` processes: what a copy of a stopped node's data directory gives away, and what a wipe
/// leaves.
@Suite struct AtRestProcessTests {
    /// Every regular file under `directory`, by path, with its bytes.
    static func files(under directory: String) -> [(String, [UInt8])] {
        guard let walker = FileManager.default.enumerator(atPath: directory) else { return [] }
        var found: [(String, [UInt8])] = []
        while let name = walker.nextObject() as? String {
            let path = directory + "/" + name
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, let data = FileManager.default.contents(atPath: path) else { continue }
            found.append((name, [UInt8](data)))
        }
        return found
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        let first = needle[0]
        var index = 0
        while index <= haystack.count - needle.count {
            if haystack[index] == first, haystack[index..<index + needle.count].elementsEqual(needle) { return true }
            index += 1
        }
        return false
    }

    /// A node whose identity has a passphrase writes messages (one long enough for overflow
    /// pages) and an attachment, and is stopped: no file of its data directory holds the text,
    /// the attachment's bytes, the identity's seed or the store key. With the passphrase
    /// everything reads back; a wrong one or none is one line naming the problem.
    @Test func protectedNode_leavesNoTextKeyOrAttachment_andReadsBackWithThePassphrase() async throws {
        let cluster = NodeCluster(slot: 5)
        defer { cluster.shutdown() }
        let passphrase = cluster.root + "/passphrase"
        try "correct horse battery staple\n".write(toFile: passphrase, atomically: true, encoding: .utf8)
        let node = TestNode(name: "dana", dataDir: cluster.root + "/dana", cluster: cluster)
        let created = await node.parley(["init", "--nick", "dana", "--passphrase-file", passphrase])
        try #require(created.exitCode == 0, "\(created)")
        try await node.start(["--passphrase-file", passphrase] + cluster.loopbackArguments)

        let tag = UUID().uuidString.prefix(8)
        let text = "meet at the north gate \(tag)"
        let long = "field notes \(tag) " + String(repeating: "observed and recorded ", count: 200)
        let secret = Array("attachment-\(tag)-".utf8) + [UInt8](repeating: 0x5A, count: 3000)
        let attachment = cluster.root + "/report.bin"
        try Data(secret).write(to: URL(fileURLWithPath: attachment))
        for arguments in [["send", "--room", "lobby", text, "--attach", attachment], ["send", "--room", "lobby", long]] {
            let sent = await node.parley(["--passphrase-file", passphrase] + arguments)
            try #require(sent.exitCode == 0, "\(sent)")
        }
        await node.stop()

        let identity = try KeyFile.load(at: node.dataDir + "/identity.key", passphrase: Array("correct horse battery staple".utf8))
        let storeKey = try StoreKeyFile.load(at: node.dataDir + "/store.key", identity: identity)
        let files = Self.files(under: node.dataDir)
        #expect(files.contains { $0.0 == "parley.db" } && files.contains { $0.0 == "store.key" }, "\(files.map(\.0))")
        for (name, bytes) in files {
            #expect(!Self.contains(bytes, Array("north gate \(tag)".utf8)), "\(name) holds the message text")
            #expect(!Self.contains(bytes, Array("field notes \(tag)".utf8)), "\(name) holds the long message's text")
            #expect(!Self.contains(bytes, Array(secret.prefix(24))), "\(name) holds the attachment")
            #expect(!Self.contains(bytes, identity.keyPair.seed.bytes), "\(name) holds the identity's seed")
            #expect(!Self.contains(bytes, storeKey.bytes), "\(name) holds the store key")
        }
        #expect(Database.fileFormat(at: node.dataDir + "/parley.db") == .encrypted)

        let history = await node.parley(["--passphrase-file", passphrase, "history", "--room", "lobby", "--json"])
        #expect(history.exitCode == 0 && history.stdout.contains(text) && history.stdout.contains("field notes \(tag)"), "\(history)")
        let messages = (try? JSONSerialization.jsonObject(with: Data(history.stdout.utf8))) as? [[String: Any]] ?? []
        let id = try #require(messages.first { ($0["text"] as? String) == text }?["id"] as? String, "\(history)")
        let saved = cluster.root + "/saved.bin"
        let fetched = await node.parley(["--passphrase-file", passphrase, "attachment", id, "--out", saved])
        #expect(fetched.exitCode == 0, "\(fetched)")
        #expect(FileManager.default.contents(atPath: saved).map { [UInt8]($0) } == secret)

        let wrongFile = cluster.root + "/wrong"
        try "not the passphrase\n".write(toFile: wrongFile, atomically: true, encoding: .utf8)
        for (arguments, fragment) in [
            (["--passphrase-file", wrongFile, "history", "--room", "lobby"], "the passphrase does not unlock the key file"),
            (["history", "--room", "lobby"], "is protected by a passphrase"),
        ] {
            let refused = await node.parley(arguments)
            #expect(refused.exitCode == 1, "\(refused)")
            #expect(refused.stdout.isEmpty && refused.stderr.split(separator: "\n").count == 1 && refused.stderr.contains(fragment), "\(refused)")
        }
    }

    /// `parley wipe --yes` beside a running node: the node stops, and the data directory keeps
    /// no file (nor the directory); the identity is gone.
    @Test func wipe_ofARunningNode_stopsIt_andLeavesNothing() async throws {
        let cluster = NodeCluster(slot: 6)
        defer { cluster.shutdown() }
        let node = try await cluster.node("erin")
        try await node.start(cluster.loopbackArguments)
        let tag = UUID().uuidString.prefix(8)
        for index in 1...20 {
            let sent = await node.parley(["send", "--room", "lobby", "wipe me \(tag) \(index)"])
            try #require(sent.exitCode == 0, "\(sent)")
        }
        let process = try #require(node.process)
        let started = ContinuousClock.now
        let wipe = await node.parley(["wipe", "--yes"])
        let took = ContinuousClock.now - started
        #expect(wipe.exitCode == 0, "\(wipe)")
        #expect(wipe.stdout.contains("stopped the running node") && wipe.stdout.contains("identity.key") && wipe.stdout.contains("parley.db"), "\(wipe)")
        #expect(await process.waitForExit(timeout: .seconds(10)), "the node still runs after the wipe:\n\(process.stderr)")
        let left = Self.files(under: node.dataDir)
        #expect(left.isEmpty, "files left after the wipe: \(left.map(\.0))")
        #expect(!FileManager.default.fileExists(atPath: node.dataDir), "the emptied data directory is removed")
        let after = await node.parley(["whoami"])
        #expect(after.exitCode == 1 && after.stderr.contains("no identity"), "\(after)")
        print("AtRestProcessTests: parley wipe --yes of a running node took \(took) (\(wipe.stdout.split(separator: "\n").last ?? ""))")
    }

    /// Off a terminal, `parley wipe` without `--yes` is a usage error naming `--yes`, and
    /// touches nothing.
    @Test func wipe_withoutYes_offATerminal_isAUsageError() async throws {
        let cluster = NodeCluster(slot: 9)
        defer { cluster.shutdown() }
        let node = try await cluster.node("finn")
        let refused = await node.parley(["wipe"])
        #expect(refused.exitCode == 2, "\(refused)")
        #expect(refused.stderr.split(separator: "\n").count == 1 && refused.stderr.contains("parley wipe --yes"), "\(refused)")
        #expect(FileManager.default.fileExists(atPath: node.dataDir + "/identity.key"))
        #expect(await node.parley(["whoami"]).exitCode == 0)
    }
}
