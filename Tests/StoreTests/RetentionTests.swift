import Foundation
import Identity
import Replica
import Store
import TestSupport
import Testing

/// A room's retention (docs/ARCHITECTURE.md, *Retention*): what falls outside the window loses
/// its words and its views on every replica, headers and digests stay, and an op that arrives
/// without its body is taken only when this replica sees it outside the window too.
@Suite struct RetentionTests {
    let alice = Fixtures.identity(0)
    let bob = Fixtures.identity(1)
    let room = PartitionDescriptor.room(RoomName("ops")!)

    func withDirectory(_ body: (String) throws -> Void) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-retention-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try body(dir)
    }

    /// Alice owns the room (keep the last 3 messages); alice and bob post six, bob reacts to
    /// and alice edits the oldest.
    func write(_ words: [String], in store: ReplicaStore) throws -> [Replica.Operation] {
        var ops = [try store.author(.roomPolicy(RoomPolicy(topic: "t", retention: .lastMessages(3))), in: room.id, by: alice, nowMillis: Fixtures.now())]
        for (index, word) in words.enumerated() {
            let now = Fixtures.now(UInt64(index + 1) * 1_000)
            ops.append(try store.author(post(word), in: room.id, by: index % 2 == 0 ? alice : bob, nowMillis: now))
            if index == 0 {
                ops.append(try store.author(.react(target: ops[1].id, emoji: "👍", on: true), in: room.id, by: bob, nowMillis: now + 1))
                ops.append(try store.author(.edit(target: ops[1].id, text: word + " edited"), in: room.id, by: alice, nowMillis: now + 2))
            }
        }
        return ops
    }

    @Test func keepTheLast3_dropsTheOlderWordsAndViews_fromTheFiles_andKeepsHeadersAndDigest() throws {
        try withDirectory { dir in
            let words = (0..<6).map { "retained-\($0)-\(UInt64.random(in: 1...UInt64.max))" }
            let store = try ReplicaStore(path: dir + "/parley.db")
            try store.log.ensurePartition(room, joined: true)
            let ops = try write(words, in: store)
            #expect(try store.views.history(room.id).map(\.text) == Array(words.suffix(3)))
            #expect(try store.views.history(room.id).allSatisfy { $0.reactions.isEmpty })
            #expect(try store.log.opCount(room.id) == ops.count, "every header stays")
            #expect(ErasureTests.wordsOnDisk(words, in: dir) == Array(words.suffix(3)), "the older words are gone from the files")
            #expect(try store.views.roomPolicy(room.id)?.policy.topic == "t", "the policy op never expires")
            let stored = try store.log.allOps(in: room.id)
            #expect(stored.filter(\.isExpired).count == 5, "three posts, the reaction and the edit")
            // The views are a function of the op set: a rebuild gives the same.
            try store.views.rebuildViews()
            #expect(try store.views.history(room.id).map(\.text) == Array(words.suffix(3)))

            // Another replica given the ops whole, newest author first, ends the same, and so
            // does one given the stored forms (the old ones without their bodies).
            for given in [ops.reversed().sorted { $0.author == bob.id && $1.author != bob.id }, stored] {
                let other = try Fixtures.store(partitions: [room])
                var outcomes: [ApplyOutcome] = []
                for chain in [alice.id, bob.id] {
                    outcomes += try other.apply(given.filter { $0.author == chain }.sorted { $0.seq < $1.seq }, nowMillis: Fixtures.now(60_000))
                }
                // Without the other chain first, a header alone may be inside the window here: held, not taken.
                if outcomes.contains(.rejected(.rule(.insideRetention))) {
                    for chain in [alice.id, bob.id] {
                        _ = try other.apply(given.filter { $0.author == chain }.sorted { $0.seq < $1.seq }, nowMillis: Fixtures.now(60_000))
                    }
                }
                #expect(try other.log.digest(room.id) == store.log.digest(room.id), "\(outcomes)")
                #expect(try other.views.history(room.id).map(\.text) == Array(words.suffix(3)))
                #expect(try other.log.allOps(in: room.id).filter(\.isExpired).count == 5)
            }
        }
    }

    @Test func anOpWithoutItsBody_insideTheWindowHere_isHeld_andTakenOnceOutside() throws {
        let source = try Fixtures.store(partitions: [room])
        let ops = try write((0..<6).map { "w\($0)" }, in: source)
        let expiredPost = try #require(try source.log.allOps(in: room.id).first { $0.isExpired && $0.type == OperationType.post.rawValue })
        let replica = try Fixtures.store(partitions: [room])
        // The policy and the post's own chain up to it, but not the three later posts.
        let before = ops.filter { $0.author == expiredPost.author && $0.seq < expiredPost.seq }
        #expect(try replica.apply(before, nowMillis: Fixtures.now(60_000)).allSatisfy { $0 == .applied })
        #expect(try replica.apply([expiredPost], nowMillis: Fixtures.now(60_000)) == [.rejected(.rule(.insideRetention))])
        #expect(try replica.log.opCount(room.id) == before.count)
        // Once three later posts are held, the same header is outside here too.
        let later = ops.filter { $0.author != expiredPost.author }
        _ = try replica.apply(later, nowMillis: Fixtures.now(60_000))
        #expect(try replica.apply([expiredPost], nowMillis: Fixtures.now(60_000)) == [.applied])
        // A header alone in a room without retention, or of an op that never expires: refused.
        let plain = try Fixtures.store(partitions: [room])
        #expect(try plain.apply([try Replica.Operation(expiredHeader: ops[0].header)], nowMillis: Fixtures.now()) != [.applied])
    }

    @Test func keepDays_dropsWhatTheClockPutsOutside() throws {
        try withDirectory { dir in
            let store = try ReplicaStore(path: dir + "/parley.db")
            try store.log.ensurePartition(room, joined: true)
            let day: UInt64 = 86_400_000
            let now = Fixtures.now(10 * day)
            try store.author(.roomPolicy(RoomPolicy(retention: .days(2))), in: room.id, by: alice, nowMillis: now - 5 * day)
            let old = "old-\(UInt64.random(in: 1...UInt64.max))", recent = "recent-\(UInt64.random(in: 1...UInt64.max))"
            try store.author(post(old), in: room.id, by: alice, nowMillis: now - 3 * day)
            try store.author(post(recent), in: room.id, by: alice, nowMillis: now - day)
            // Written then, the old post was inside; the clock moves on.
            #expect(try store.views.expireByClock(nowMillis: now) == 1)
            #expect(try store.views.history(room.id).map(\.text) == [recent])
            #expect(ErasureTests.wordsOnDisk([old, recent], in: dir) == [recent])
            #expect(try store.views.expireByClock(nowMillis: now) == 0)
            #expect(try store.views.roomPolicy(room.id)?.policy.retention == .days(2))
        }
    }
}

/// History for new joiners, off: each replica shows its user only what was written after they
/// joined (hidden, not secret: the ops are stored).
@Suite struct NoHistoryTests {
    @Test func aJoinerSees_onlyMessagesAfterTheirJoin_whenThePolicySaysSo() throws {
        let alice = Fixtures.identity(0)
        let room = PartitionDescriptor.room(RoomName("quiet")!)
        let source = try Fixtures.store(partitions: [room])
        let now = UInt64(Date().timeIntervalSince1970 * 1_000)
        var ops = [try source.author(.roomPolicy(RoomPolicy(historyForNewJoiners: false)), in: room.id, by: alice, nowMillis: now - 60_000)]
        ops.append(try source.author(post("before bob joined"), in: room.id, by: alice, nowMillis: now - 50_000))
        ops.append(try source.author(post("after bob joined"), in: room.id, by: alice, nowMillis: now + 60_000))

        let joiner = try Fixtures.store()
        try joiner.log.ensurePartition(room, joined: true)  // the user joins now
        #expect(try joiner.apply(ops, nowMillis: now + 60_000).allSatisfy { $0 == .applied })
        #expect(try joiner.views.history(room.id).map(\.text) == ["after bob joined"])
        #expect(try joiner.log.opCount(room.id) == 3, "hidden, not dropped")
        // A user who joined before the first message sees it.
        let open = try Fixtures.store()
        try open.log.ensurePartition(room, joined: true)
        try open.database.execute("UPDATE partitions SET joined_at = ?", .integer(Int64(now - 55_000)))
        #expect(try open.apply(ops, nowMillis: now + 60_000).allSatisfy { $0 == .applied })
        #expect(try open.views.history(room.id).map(\.text) == ["before bob joined", "after bob joined"])
    }
}
