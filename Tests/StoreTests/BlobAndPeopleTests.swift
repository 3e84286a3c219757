import Foundation
import Identity
import Replica
import SQLite
import Store
import TestSupport
import Testing
import Wire

/// Attachment blobs (encrypted in conversations) and the people directory with its presence seam.
@Suite struct BlobAndPeopleTests {
    let alice = Fixtures.identity(0)
    let bob = Fixtures.identity(1)
    let carol = Fixtures.identity(2)
    let dave = Fixtures.identity(3)
    let now = Fixtures.now()

    @Test func attachments_inAConversation_areKeptEncrypted_andOpenForMembersOnly() throws {
        let a = try Nodes.store(alice), b = try Nodes.store(bob), d = try Nodes.store(dave)
        let conversation = try a.createConversation(name: "maps", members: [bob.id], by: alice, nowMillis: now)
        let content = Array("GRID 41-17, the cave behind the waterfall".utf8)
        let attachment = try a.attach(content, name: "map.txt", mime: "text/plain", in: conversation.id, by: alice, nowMillis: now)
        #expect(attachment.size == UInt64(content.count))
        let stored = try #require(try a.blobs.blob(attachment.hash))
        #expect(stored != content && Data(stored).range(of: Data("waterfall".utf8)) == nil)
        try a.author(.post(text: "", attachments: [attachment], location: nil, replyTo: nil), in: conversation.id, by: alice, nowMillis: now + 1)
        try Nodes.sync([a, b, d])
        #expect(try b.views.history(conversation.id).first?.attachments == [attachment])
        #expect(try a.blobs.attachmentContent(attachment, in: conversation.id) == .content(content))
        #expect(try b.blobs.attachmentContent(attachment, in: conversation.id) == .notFetched)
        // Blobs travel later (by hash, from peers); simulate the fetch.
        try b.blobs.storeBlob(stored, nowMillis: now)
        try d.blobs.storeBlob(stored, nowMillis: now)
        #expect(try b.blobs.attachmentContent(attachment, in: conversation.id) == .content(content))
        #expect(try d.blobs.attachmentContent(attachment, in: conversation.id) == .cannotOpen)
        #expect(throws: StoreError.self) {
            try a.attach([UInt8](repeating: 0, count: Blobs.maxBlobBytes + 1), name: "big", mime: "x", in: conversation.id, by: alice, nowMillis: now)
        }
    }

    @Test func people_listsTheDirectory_withPresenceFromTheSeam() throws {
        let store = try Nodes.store(alice)
        let directory = PartitionDescriptor.directory.id
        try store.author(
            .profile(subject: alice.id, nick: "alice", displayName: "Alice", status: nil, presence: .hidden, avatar: nil), in: directory, by: alice,
            nowMillis: now)
        try store.author(
            .profile(subject: bob.id, nick: "bob", displayName: "Bob B", status: "fishing", presence: .away, avatar: nil), in: directory, by: bob,
            nowMillis: now)
        try store.author(
            .profile(subject: carol.id, nick: "carol", displayName: nil, status: nil, presence: nil, avatar: nil), in: directory, by: carol, nowMillis: now)
        var people = try store.directory.people(me: alice.id)
        #expect(people.map(\.nick) == ["alice", "bob", "carol"])
        #expect(people.map(\.presence) == [.offline, .offline, .offline])  // hidden shows as offline; no node: others offline
        people = try store.directory.people(
            me: alice.id, live: [bob.id: PeerPresence(linked: true, lastSeenMillis: now), carol.id: PeerPresence(linked: true)])
        #expect(people.map(\.presence) == [.offline, .away, .online])
        #expect(people[1].lastSeenMillis == now)
        #expect(try store.directory.people(me: alice.id, search: "FISH").map(\.user) == [bob.id])
        #expect(try store.directory.people(me: alice.id, search: String(carol.id.text.prefix(6))).map(\.user) == [carol.id])
        let stranger = try Nodes.store(dave)
        #expect(try stranger.directory.people(me: dave.id).map(\.isMe) == [true])
    }

    @Test func lastSeen_isKeptLocally_shownForOfflinePeople_butNotForHiddenOnes() throws {
        let store = try Nodes.store(alice)
        let directory = PartitionDescriptor.directory.id
        try store.author(
            .profile(subject: bob.id, nick: "bob", displayName: nil, status: nil, presence: nil, avatar: nil), in: directory, by: bob, nowMillis: now)
        try store.author(
            .profile(subject: carol.id, nick: "carol", displayName: nil, status: nil, presence: .hidden, avatar: nil), in: directory, by: carol,
            nowMillis: now)
        try store.directory.noteLastSeen(bob.id, atMillis: now + 5)
        try store.directory.noteLastSeen(bob.id, atMillis: now + 1)  // an older sighting changes nothing
        try store.directory.noteLastSeen(carol.id, atMillis: now + 7)
        #expect(try store.directory.lastSeen() == [bob.id: now + 5, carol.id: now + 7])
        let people = try store.directory.people(me: alice.id)
        #expect(people.map(\.presence) == [.online, .offline, .offline])
        #expect(people.map(\.lastSeenMillis) == [nil, now + 5, nil])
    }

    @Test func missingBlobs_areThoseTheViewsName_andBlobsAreNamedOnlyWhereTheyAppear() throws {
        let a = try Nodes.store(alice), b = try Nodes.store(bob)
        let lobby = PartitionDescriptor.room(RoomName("lobby")!)
        try a.log.ensurePartition(lobby, joined: true)
        try b.log.ensurePartition(lobby, joined: true)
        let content = [UInt8](repeating: 42, count: 1_000)
        let attachment = try a.attach(content, name: "a.bin", mime: "application/octet-stream", in: lobby.id, by: alice, nowMillis: now)
        try a.author(.post(text: "", attachments: [attachment], location: nil, replyTo: nil), in: lobby.id, by: alice, nowMillis: now)
        try Nodes.sync([a, b])
        #expect(try a.blobs.missingBlobs().isEmpty)
        #expect(try b.blobs.missingBlobs().map(\.hash) == [attachment.hash])
        #expect(try b.blobs.missingBlobs().map(\.partition) == [lobby.id])
        #expect(try a.blobs.isBlobNamed(attachment.hash, in: lobby.id))
        #expect(try !a.blobs.isBlobNamed(attachment.hash, in: PartitionDescriptor.directory.id))
        let chunk = try #require(try a.blobs.blobChunk(attachment.hash, offset: 990, length: 100))
        #expect(chunk.total == 1_000 && chunk.data == [UInt8](repeating: 42, count: 10))
        #expect(try b.blobs.blobChunk(attachment.hash, offset: 0, length: 10) == nil)
        // A node that carries the room without having joined it (it left) reads none of it, so
        // fetches none of its blobs; it is a carrier of the room from then on.
        try b.log.setJoined(lobby.id, false)
        #expect(try b.blobs.missingBlobs().isEmpty)
        #expect(try b.carrier.isCarried(lobby.id))
        #expect(try !a.carrier.isCarried(lobby.id))
    }

    /// A node short of many blobs asks for the newest first, each once, and its store reads no
    /// further than the blobs it returns.
    @Test func missingBlobs_areTheNewestFirst_andReadOnlyAsFarAsTheLimit() throws {
        let a = try Nodes.store(alice), b = try Nodes.store(bob)
        let lobby = PartitionDescriptor.room(RoomName("lobby")!)
        try a.log.ensurePartition(lobby, joined: true)
        try b.log.ensurePartition(lobby, joined: true)
        var hashes: [Bytes32] = []
        for k in 0..<200 {
            let attachment = try a.attach(
                [UInt8(k % 256), UInt8(k / 256), 1], name: "\(k).bin", mime: "application/octet-stream", in: lobby.id, by: alice, nowMillis: now)
            hashes.append(attachment.hash)
            // Every tenth post carries the one before's file again: asked for once.
            let again =
                k % 10 == 9
                ? try a.attach(
                    [UInt8((k - 1) % 256), UInt8((k - 1) / 256), 1], name: "again.bin", mime: "application/octet-stream", in: lobby.id, by: alice,
                    nowMillis: now) : nil
            try a.author(
                .post(text: "", attachments: [attachment] + (again.map { [$0] } ?? []), location: nil, replyTo: nil), in: lobby.id, by: alice,
                nowMillis: now + UInt64(k))
        }
        try Nodes.sync([a, b])
        func steps(_ limit: Int) throws -> (blobs: [Bytes32], steps: Int) {
            let before = b.database.statementCounts(.virtualMachineSteps)
            let blobs = try b.blobs.missingBlobs(limit: limit).map(\.hash)
            let after = b.database.statementCounts(.virtualMachineSteps)
            return (blobs, after.reduce(0) { $0 + $1.value - (before[$1.key] ?? 0) })
        }
        let newest = try steps(10), all = try steps(500)
        #expect(newest.blobs == Array(hashes.suffix(10).reversed()))
        #expect(all.blobs.count == 200 && Set(all.blobs) == Set(hashes))
        #expect(try b.blobs.missingBlobs(limit: 0).isEmpty)
        #expect(newest.steps * 4 < all.steps, "10 blobs took \(newest.steps) steps, 200 took \(all.steps): the store read past the limit")
    }

    @Test func aDeletedPostsAttachment_isNeitherNamedNorMissing() throws {
        let a = try Nodes.store(alice), b = try Nodes.store(bob)
        let lobby = PartitionDescriptor.room(RoomName("lobby")!)
        try a.log.ensurePartition(lobby, joined: true)
        try b.log.ensurePartition(lobby, joined: true)
        let attachment = try a.attach(
            [UInt8](repeating: 7, count: 100), name: "a.bin", mime: "application/octet-stream", in: lobby.id, by: alice, nowMillis: now)
        let post = try a.author(.post(text: "", attachments: [attachment], location: nil, replyTo: nil), in: lobby.id, by: alice, nowMillis: now)
        #expect(try a.blobs.isBlobNamed(attachment.hash, in: lobby.id))
        try a.author(.delete(target: post.id, targetSeq: post.seq), in: lobby.id, by: alice, nowMillis: now + 1)
        try Nodes.sync([a, b])
        #expect(try !a.blobs.isBlobNamed(attachment.hash, in: lobby.id))
        #expect(try b.blobs.missingBlobs().isEmpty)
    }

    /// A store made before the attachments' index (migration 005) gets it filled from the
    /// messages it already holds.
    @Test func aStoreFromBeforeTheAttachmentIndex_getsItOverItsMessages() throws {
        try Nodes.withTemporaryDirectory { dir in
            let path = dir + "/parley.db"
            let lobby = PartitionDescriptor.room(RoomName("lobby")!)
            let attachment: Replica.Attachment
            do {
                let store = try ReplicaStore(path: path)
                try store.log.ensurePartition(lobby, joined: true)
                attachment = try store.attach([1, 2, 3], name: "a.bin", mime: "application/octet-stream", in: lobby.id, by: alice, nowMillis: now)
                try store.author(.post(text: "", attachments: [attachment], location: nil, replyTo: nil), in: lobby.id, by: alice, nowMillis: now)
                // As a store from before migration 005 was.
                try store.database.execute(
                    """
                    DROP TRIGGER attachment_hashes_of_deleted_messages; DROP TABLE attachment_hashes;
                    DELETE FROM schema_migrations WHERE name IN ('005-attachment-hashes', '009-backfills');
                    DELETE FROM settings WHERE key = 'attachment_hashes_filled'
                    """)
            }
            let reopened = try ReplicaStore(path: path)
            let listed: Int? = try reopened.database.scalar("SELECT count(*) FROM attachment_hashes")
            #expect(listed == 1)
            #expect(try reopened.blobs.isBlobNamed(attachment.hash, in: lobby.id))
            #expect(try !reopened.blobs.isBlobNamed(Bytes32([UInt8](repeating: 9, count: 32))!, in: lobby.id))
            try reopened.database.execute("DELETE FROM blobs")
            #expect(try reopened.blobs.missingBlobs().map(\.hash) == [attachment.hash])
        }
    }

    @Test func readReceipts_reachTheMembers_coverOlderMessages_andCarriersSeeNone() throws {
        let a = try Nodes.store(alice), b = try Nodes.store(bob), d = try Nodes.store(dave)
        let conversation = try a.createConversation(name: "receipts", members: [bob.id], by: alice, nowMillis: now)
        try a.author(.post(text: "one", attachments: [], location: nil, replyTo: nil), in: conversation.id, by: alice, nowMillis: now + 1)
        try a.author(.post(text: "two", attachments: [], location: nil, replyTo: nil), in: conversation.id, by: alice, nowMillis: now + 2)
        try Nodes.sync([a, b, d])
        let first = try #require(try b.views.history(conversation.id).first)
        try b.author(.readMarker(partition: conversation.id, position: first.hlc), in: conversation.id, by: bob, nowMillis: now + 3)
        // A receipt naming another partition changes nothing.
        try b.author(.readMarker(partition: PartitionDescriptor.directory.id, position: first.hlc), in: conversation.id, by: bob, nowMillis: now + 4)
        try Nodes.sync([a, b, d])
        #expect(try a.views.history(conversation.id).map(\.readBy) == [[bob.id], []])
        #expect(try a.views.readReceipts(conversation.id) == [bob.id: first.hlc])
        #expect(try d.views.readReceipts(conversation.id).isEmpty)
        #expect(try d.views.history(conversation.id).isEmpty)
    }
}
