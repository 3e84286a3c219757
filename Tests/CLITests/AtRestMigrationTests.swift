import Foundation
import Identity
import Replica
import SQLite
import Store
import TestSupport
import Testing

/// A store written in today's plain format (before encryption) is converted by the first command
/// that opens it, with nothing lost: every row of every table (ops, views, keys, blobs) reads
/// back the same through the key, and no message text is left in clear in the directory.
@Suite(.onCommandThreads) struct AtRestMigrationTests {
    /// Every row of every table, in rowid order, as text (blobs in hex).
    static func snapshot(_ database: Database) throws -> [String: [String]] {
        let tables = try database.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").rows { $0.text(0) }
        var all: [String: [String]] = [:]
        for table in tables {
            let statement = try database.prepare("SELECT * FROM \"\(table)\"")
            let columns = statement.columnCount
            all[table] = try statement.rows { row in
                (0..<columns).map { "\(row.value($0))" }.joined(separator: "|")
            }.sorted()
        }
        return all
    }

    @Test func plainStore_isConvertedByTheFirstCommand_withNothingLost() throws {
        try withSandbox { sandbox in
            sandbox.initialize()
            let database = sandbox.dataDir + "/parley.db"
            // Today's format: a plain file made by the plain path, no store key yet.
            for name in ["/parley.db", "/parley.db-wal", "/parley.db-shm", "/store.key"] { try? FileManager.default.removeItem(atPath: sandbox.dataDir + name) }
            let me = try KeyFile.load(at: sandbox.dataDir + "/identity.key")
            let peer = Fixtures.identity(7)
            let tag = UUID().uuidString.prefix(8)
            var factory = OpFactory(startMillis: Fixtures.now())
            do {
                let store = try ReplicaStore(path: database)
                try store.useIdentity(me)
                let lobby = PartitionDescriptor.room(RoomName("lobby")!)
                try store.log.ensurePartition(lobby, joined: true)
                for index in 0..<150 {
                    try store.author(
                        post("plain words \(tag) \(index) " + String(repeating: "x", count: index * 10)), in: lobby.id, by: me,
                        nowMillis: Fixtures.now(UInt64(index)))
                    #expect(try store.apply(factory.make(post("peer words \(index)"), in: lobby.id, by: peer), nowMillis: Fixtures.now()) == .applied)
                }
                let blob = try store.blobs.storeBlob(Array("blob bytes \(tag)".utf8) + [UInt8](repeating: 1, count: 2000), nowMillis: Fixtures.now())
                let attached = Attachment(name: "a.bin", size: 2013, mime: "application/octet-stream", hash: blob)
                try store.author(
                    .post(text: "with a file \(tag)", attachments: [attached], location: nil, replyTo: nil), in: lobby.id, by: me, nowMillis: Fixtures.now(500))
                _ = try store.createConversation(name: "secret plans \(tag)", members: [peer.id], by: me, nowMillis: Fixtures.now(600))
                store.database.close()
            }
            #expect(Database.fileFormat(at: database) == .plain)
            let before = try Self.snapshot(try Database(path: database, mode: .readOnly))
            #expect((before["ops"]?.count ?? 0) > 300)

            let history = sandbox.parley("history", "--room", "lobby", "--json")
            expectSuccess(history)
            #expect(history.jsonArray().count == 301, "\(history.stdout.prefix(300))")
            #expect(Database.fileFormat(at: database) == .encrypted)
            let key = try #require(try NodeStore.key(sandbox.dataDir))
            let after = try Self.snapshot(try Database(path: database, mode: .readOnly, cipherKey: key.bytes))
            #expect(after.keys.sorted() == before.keys.sorted())
            // Every row is still there; the command itself may add some (its inbox partition).
            for table in before.keys.sorted() {
                let missing = Set(before[table] ?? []).subtracting(after[table] ?? [])
                #expect(missing.isEmpty, "table \(table) lost \(missing.count) rows in the conversion")
            }
            for table in ["ops", "messages", "blobs", "epoch_keys"] where before[table] != nil {
                #expect(after[table] == before[table], "table \(table) changed in the conversion")
            }
            let names = try FileManager.default.contentsOfDirectory(atPath: sandbox.dataDir)
            #expect(!names.contains { $0.contains(".plain") || $0.contains(".encrypting") }, "\(names)")
            for name in names {
                let bytes = [UInt8](FileManager.default.contents(atPath: sandbox.dataDir + "/" + name) ?? Data())
                for marker in ["plain words \(tag)", "blob bytes \(tag)", "with a file \(tag)"] {
                    #expect(!AtRestMigrationTests.contains(bytes, Array(marker.utf8)), "\(name) holds '\(marker)' in clear")
                }
            }
        }
    }

    /// An encrypted store whose `store.key` is gone: one line naming the missing file, and no new
    /// key made in its place (which would open nothing).
    @Test func encryptedStore_withoutItsKeyFile_saysSo() throws {
        try withSandbox { sandbox in
            sandbox.initialize()
            expectSuccess(sandbox.parley("send", "--room", "lobby", "kept under the key"))
            try FileManager.default.removeItem(atPath: sandbox.dataDir + "/store.key")
            let run = sandbox.parley("history", "--room", "lobby")
            expectError(run, exitCode: 1, "its key file \(sandbox.dataDir)/store.key is missing")
            #expect(run.stderrLines.count == 1, "\(run)")
            #expect(!FileManager.default.fileExists(atPath: sandbox.dataDir + "/store.key"))
        }
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        var index = 0
        while index <= haystack.count - needle.count {
            if haystack[index] == needle[0], haystack[index..<index + needle.count].elementsEqual(needle) { return true }
            index += 1
        }
        return false
    }
}
