import Foundation
import Identity
import Replica
import SQLite
import Store
import TestSupport
import Testing
import Wire

/// The backfills of migrations 005 (the attachments' hashes) and 008 (the bodies of posts
/// deleted before it) run once, as migration 009, in stores that had not had them: earlier
/// versions ran them at open until a setting recorded each done.
@Suite struct BackfillMigrationTests {
    let alice = Fixtures.identity(0)
    let lobby = PartitionDescriptor.room(RoomName("#Lobby")!)

    func withDirectory(_ body: (String) throws -> Void) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-backfill-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try body(dir)
    }

    /// A store as an earlier version left it: a post with an attachment whose hash is not
    /// listed, and a deleted post whose body is still held (as before 008), without migration
    /// 009; `flags` are the settings that version wrote once a backfill was done.
    func makeOldStore(at path: String, flags: [String]) throws -> (attachment: Replica.Attachment, deleted: Replica.Operation) {
        let store = try ReplicaStore(path: path)
        try store.log.ensurePartition(lobby, joined: true)
        let now = Fixtures.now()
        let attachment = try store.attach([1, 2, 3], name: "a.bin", mime: "application/octet-stream", in: lobby.id, by: alice, nowMillis: now)
        try store.author(.post(text: "", attachments: [attachment], location: nil, replyTo: nil), in: lobby.id, by: alice, nowMillis: now)
        let deleted = try store.author(post("deleted before 008"), in: lobby.id, by: alice, nowMillis: now)
        try store.author(.delete(target: deleted.id), in: lobby.id, by: alice, nowMillis: now)
        try store.database.execute("DELETE FROM attachment_hashes")
        try store.database.execute(
            "UPDATE ops SET body = ?, erasure = NULL WHERE header = ?", .blob(deleted.body), .blob(deleted.header))
        try store.database.execute("DELETE FROM schema_migrations WHERE name = '009-backfills'")
        for flag in flags { try store.database.execute("INSERT INTO settings(key, value) VALUES (?, 1)", .text(flag)) }
        return (attachment, deleted)
    }

    func heldBody(of op: Replica.Operation, in store: ReplicaStore) throws -> [UInt8]? {
        try store.database.prepare("SELECT body FROM ops WHERE header = ?").rows(.blob(op.header)) { $0.blob(0) }.first
    }

    func flags(_ store: ReplicaStore) throws -> Int {
        try store.database.scalar(
            "SELECT count(*) FROM settings WHERE key IN ('attachment_hashes_filled', 'deleted_bodies_erased')", as: Int.self) ?? -1
    }

    func has009(_ store: ReplicaStore) throws -> Bool {
        try store.database.scalar("SELECT count(*) FROM schema_migrations WHERE name = '009-backfills'", as: Int.self) == 1
    }

    /// A store that ran the SQL of 005 and 008 but not their backfills gets both at the next
    /// open, as migration 009, and keeps no setting for them.
    @Test func aStoreWithBackfillsPending_getsThemOnce_asMigration009() throws {
        try withDirectory { dir in
            let path = dir + "/parley.db"
            let (attachment, deleted) = try makeOldStore(at: path, flags: [])
            let reopened = try ReplicaStore(path: path)
            #expect(try reopened.blobs.isBlobNamed(attachment.hash, in: lobby.id))
            #expect(try heldBody(of: deleted, in: reopened) == [])
            #expect(try reopened.views.history(lobby.id).map(\.deleted) == [false, true])
            #expect(try has009(reopened))
            #expect(try flags(reopened) == 0)
        }
    }

    /// A store whose earlier version recorded both backfills done is not backfilled again (what
    /// 009 would change stays as it is), and loses the settings.
    @Test func aStoreWhoseBackfillsRan_isNotBackfilledAgain_andLosesTheirSettings() throws {
        try withDirectory { dir in
            let path = dir + "/parley.db"
            let (attachment, deleted) = try makeOldStore(at: path, flags: ["attachment_hashes_filled", "deleted_bodies_erased"])
            let reopened = try ReplicaStore(path: path)
            #expect(try !reopened.blobs.isBlobNamed(attachment.hash, in: lobby.id))
            #expect(try heldBody(of: deleted, in: reopened) == deleted.body)
            #expect(try has009(reopened))
            #expect(try flags(reopened) == 0)
        }
    }

    /// One backfill done and one pending: only the pending one runs.
    @Test func aStoreWithOneBackfillPending_getsOnlyThatOne() throws {
        try withDirectory { dir in
            let path = dir + "/parley.db"
            let (attachment, deleted) = try makeOldStore(at: path, flags: ["attachment_hashes_filled"])
            let reopened = try ReplicaStore(path: path)
            #expect(try !reopened.blobs.isBlobNamed(attachment.hash, in: lobby.id))
            #expect(try heldBody(of: deleted, in: reopened) == [])
            #expect(try flags(reopened) == 0)
        }
    }
}
