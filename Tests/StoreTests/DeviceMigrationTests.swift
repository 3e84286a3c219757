import Foundation
import Identity
import Replica
import Store
import TestSupport
import Testing

/// A store from before devices (no migration 014) opens with every message and the person's
/// conversations as they were, its identity its person's first device, and goes on writing
/// (docs/DESIGN.md §3.8, Migration).
@Suite struct DeviceMigrationTests {
    let alice = Fixtures.identity(1)
    let bob = Fixtures.identity(3)
    let lobby = PartitionDescriptor.room(RoomName("lobby")!)

    @Test func aStoreFromBeforeDevices_keepsEveryMessage_andItsKeyIsTheFirstDevice() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-devices-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/parley.db"
        let conversationID: PartitionID
        do {
            let (a, b) = (try ReplicaStore(path: path), try Nodes.store(bob))
            try a.useIdentity(alice)
            for store in [a, b] { try store.log.ensurePartition(lobby, joined: true) }
            try a.author(
                .profile(subject: alice.id, nick: "alice", displayName: nil, status: "here", presence: nil, avatar: nil),
                in: PartitionDescriptor.directory.id, by: alice, nowMillis: Fixtures.now())
            for index in 1...50 { try a.author(post("lobby \(index)"), in: lobby.id, by: alice, nowMillis: Fixtures.now(UInt64(index))) }
            let conversation = try a.createConversation(name: "plans", members: [bob.id], by: alice, nowMillis: Fixtures.now(100))
            conversationID = conversation.id
            try a.author(post("secret plan"), in: conversation.id, by: alice, nowMillis: Fixtures.now(101))
            try Nodes.sync([a, b])
            try b.processInbox(me: bob)
            try b.author(post("bob agrees"), in: conversation.id, by: bob, nowMillis: Fixtures.now(102))
            try Nodes.sync([a, b])
            // As the version before devices left it: no device tables, no migration 014.
            try a.database.execute("DROP TABLE devices; DROP TABLE device_revocations")
            try a.database.execute("DELETE FROM schema_migrations WHERE name = '014-devices'")
        }
        let store = try ReplicaStore(path: path)
        try store.useIdentity(alice)
        #expect(try store.database.scalar("SELECT count(*) FROM schema_migrations WHERE name = '014-devices'", as: Int.self) == 1)
        #expect(try store.views.history(lobby.id).map(\.text) == (1...50).map { "lobby \($0)" })
        #expect(try store.views.history(conversationID).map(\.text) == ["secret plan", "bob agrees"])
        #expect(try store.directory.profile(alice.id)?.nick == "alice")
        let devices = try store.devices.devices(of: alice.id)
        #expect(devices.count == 1 && devices.first?.isPersonKey == true && devices.first?.revoked == false)
        #expect(try store.devices.person(of: alice.id) == alice.id)
        try store.author(post("after the migration"), in: lobby.id, by: alice, nowMillis: Fixtures.now(200))
        #expect(try store.views.history(lobby.id).last?.text == "after the migration")
    }
}
