import Foundation
import Identity
import Replica
import SQLite
import Store
import Synchronization
import TestSupport
import Testing
import Wire

@Suite struct StoreTests {
    let alice = Fixtures.identity(0)
    let bob = Fixtures.identity(1)
    let lobby = PartitionDescriptor.room(RoomName("#Lobby")!)

    func withTemporaryDirectory(_ body: (String) throws -> Void) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-store-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try body(dir)
    }

    @Test func fileStore_migratesFromZero_andReopensWithItsData() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/parley.db"
            do {
                let store = try ReplicaStore(path: path)
                try store.log.ensurePartition(lobby, joined: true)
                try store.author(post("kept"), in: lobby.id, by: alice, nowMillis: Fixtures.now())
            }
            let reopened = try ReplicaStore(path: path)
            #expect(try reopened.views.history(lobby.id).map(\.text) == ["kept"])
            let migrations: Int? = try reopened.database.scalar("SELECT count(*) FROM schema_migrations")
            #expect(migrations ?? 0 >= 12)
            let named: Int? = try reopened.database.scalar(
                "SELECT count(*) FROM schema_migrations WHERE name IN ('010-private-rooms', '011-room-policies', '013-readable-views')")
            #expect(named == 3)
            #expect(try reopened.database.scalar("PRAGMA journal_mode", as: String.self) == "wal")
        }
    }

    /// `received_at` is Unix microseconds: the store's clock when it has one (the node's wall
    /// clock), else the apply's `nowMillis`; a store from before 016 has its milliseconds
    /// turned into microseconds once.
    @Test func receivedAt_isInMicroseconds_andOlderStoresAreConvertedOnce() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/parley.db"
            let stamps = { (store: ReplicaStore) throws -> [Int64] in
                try store.database.prepare("SELECT received_at FROM ops ORDER BY oid").rows { $0.int64(0) }
            }
            do {
                let store = try ReplicaStore(path: path)
                try store.log.ensurePartition(lobby, joined: true)
                try store.author(post("by nowMillis"), in: lobby.id, by: alice, nowMillis: Fixtures.now())
                store.log.receivedAtMicros = { Fixtures.now() * 1_000 + 123 }
                try store.author(post("by the clock"), in: lobby.id, by: alice, nowMillis: Fixtures.now())
                #expect(try stamps(store) == [Int64(Fixtures.now() * 1_000), Int64(Fixtures.now() * 1_000 + 123)])
                // As a store before 016 holds them: milliseconds, the migration not run.
                try store.database.execute("UPDATE ops SET received_at = received_at / 1000")
                try store.database.execute("DELETE FROM schema_migrations WHERE name = '016-received-at-micros'")
            }
            #expect(try stamps(ReplicaStore(path: path)) == [Int64(Fixtures.now() * 1_000), Int64(Fixtures.now() * 1_000)])
            #expect(try stamps(ReplicaStore(path: path)) == [Int64(Fixtures.now() * 1_000), Int64(Fixtures.now() * 1_000)], "converted once")
        }
    }

    /// `opCount()` (what `parley status` shows) counts every partition's ops in one query; it
    /// must equal the counts per partition, including another connection's writes.
    @Test func opCount_isTheSumOverPartitions_includingOtherConnections() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/parley.db"
            let store = try ReplicaStore(path: path)
            let general = PartitionDescriptor.room(RoomName("#general")!)
            #expect(try store.log.opCount() == 0)
            try store.log.ensurePartition(lobby, joined: true)
            try store.log.ensurePartition(general, joined: true)
            for i in 0..<3 { try store.author(post("lobby \(i)"), in: lobby.id, by: alice, nowMillis: Fixtures.now()) }
            try store.author(post("general"), in: general.id, by: alice, nowMillis: Fixtures.now())
            let other = try ReplicaStore(path: path)  // `parley send` while a node runs
            try other.author(post("from bob"), in: general.id, by: bob, nowMillis: Fixtures.now())
            let perPartition = try store.log.partitions().map { try store.log.opCount($0.id) }.reduce(0, +)
            #expect(try store.log.opCount(lobby.id) == 3 && store.log.opCount(general.id) == 2)
            #expect(try store.log.opCount() == perPartition)
            #expect(try store.log.opCount() == 5)
        }
    }

    /// Two connections creating the same partitions at once (a node carrying a room while a
    /// command joins it) both get it, with one record: the one that loses the race takes the
    /// other's record rather than failing on the unique id.
    @Test func twoConnections_creatingOnePartitionAtOnce_bothGetOneRecord() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/parley.db"
            _ = try ReplicaStore(path: path)
            let rooms = (0..<300).map { PartitionDescriptor.room(RoomName("race\($0)")!) }
            let outcomes = Mutex<[Int: Result<[Int64], any Error>]>([:])
            DispatchQueue.concurrentPerform(iterations: 2) { side in
                let outcome = Result { () throws -> [Int64] in
                    let store = try ReplicaStore(path: path)
                    return try rooms.map { try store.log.ensurePartition($0, joined: side == 0).pid }
                }
                outcomes.withLock { $0[side] = outcome }
            }
            let (first, second) = outcomes.withLock { ($0[0]!, $0[1]!) }
            #expect(try first.get() == second.get())
            let records = try ReplicaStore(path: path).log.partitions().filter { rooms.map(\.id).contains($0.id) }
            #expect(records.count == rooms.count && records.allSatisfy(\.joined))
        }
    }

    /// `partitions()` is cached between changes; the cache must follow this connection's
    /// changes, its rollbacks, and another process's commits.
    @Test func partitionList_followsOwnChanges_rollbacks_andOtherConnections() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/parley.db"
            let store = try ReplicaStore(path: path)
            let general = PartitionDescriptor.room(RoomName("#general")!)
            #expect(try store.log.partitions().map(\.id) == [PartitionDescriptor.directory.id])
            try store.log.ensurePartition(lobby, joined: true)
            #expect(try store.log.partitions().map(\.id) == [PartitionDescriptor.directory.id, lobby.id])
            try store.log.setJoined(lobby.id, false)
            #expect(try store.log.partitions().last?.joined == false)

            struct Abort: Error {}
            _ = try? store.database.transaction { () throws -> Void in
                try store.log.ensurePartition(general, joined: true)
                #expect(try store.log.partitions().count == 3)
                throw Abort()
            }
            #expect(try store.log.partitions().count == 2)

            let other = try ReplicaStore(path: path)  // another process, e.g. `parley join` while a node runs
            try other.log.ensurePartition(general, joined: true)
            try other.log.setJoined(lobby.id, true)
            #expect(try store.log.partitions().map(\.id) == [PartitionDescriptor.directory.id, lobby.id, general.id])
            #expect(try store.log.partitions()[1].joined)
        }
    }

    /// What a node's own write stored, as the store reports it (`takeOpsSinceMark()`), is what
    /// reading the rows back gives; it says nothing when it cannot be sure (a rollback since the
    /// mark, a partition added), keeps nothing between writes, and carries the `data_version`
    /// that shows another process's commit.
    /// An own op follows every earlier op of its author in the store, even when the wall clock
    /// went back: after a restart (the clock starts from the author's chains' heads), and after
    /// another process wrote as the same author (`refreshAfterExternalWrite`). Nothing is written
    /// per op to keep the clock: no `hlc` setting.
    @Test func ownOps_followTheirAuthorsEarlierOps_acrossRestartsAndOtherProcesses_whenTheWallClockWentBack() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/parley.db"
            let later: UInt64 = 4_000_000_000_000
            let first: Replica.Operation
            do {
                let store = try ReplicaStore(path: path)
                try store.log.ensurePartition(lobby, joined: true)
                first = try store.author(post("first"), in: lobby.id, by: alice, nowMillis: later)
                try store.author(post("bob's, earlier"), in: lobby.id, by: bob, nowMillis: later - 10_000)
                #expect(try store.setting("hlc") == nil)
            }
            // Restarted with the wall clock an hour back.
            let store = try ReplicaStore(path: path)
            let second = try store.author(post("second"), in: lobby.id, by: alice, nowMillis: later - 3_600_000)
            #expect(second.hlc > first.hlc, "\(second.hlc) after \(first.hlc)")
            // Another process writes as alice, later still; this one then writes, its wall clock behind.
            let other = try ReplicaStore(path: path)
            let third = try other.author(post("third"), in: lobby.id, by: alice, nowMillis: later + 60_000)
            try store.refreshAfterExternalWrite()
            let fourth = try store.author(post("fourth"), in: lobby.id, by: alice, nowMillis: later - 3_600_000)
            #expect(fourth.hlc > third.hlc, "\(fourth.hlc) after \(third.hlc)")
            #expect(fourth.seq == 4)
        }
    }

    /// Speed belongs in `make bench`, but a plan that reads a whole table grows with the store and
    /// shows in SQLite's count of full-scan steps: the clock's catch-up once scanned the op log at
    /// every start (449 ms with 1,000,000 ops, against 40). A start, an identity's first use, own
    /// writes, an apply, another process's write and what sessions read (heads, a run of a chain,
    /// the newest ops) must each find their rows by an index.
    @Test func aStartAndTheWritePaths_findTheirRowsByIndex_notByReadingATableThatGrowsWithTheOpLog() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/parley.db"
            let carol = Fixtures.identity(2)
            let logged = 2_000
            do {
                let store = try ReplicaStore(path: path)
                try store.log.ensurePartition(lobby, joined: true)
                try store.authorAll((0..<logged).map { post("bob's \($0)") }, in: lobby.id, by: bob, nowMillis: Fixtures.now())
                try store.author(post("alice's"), in: lobby.id, by: alice, nowMillis: Fixtures.now())
            }
            let store = try ReplicaStore(path: path)
            try store.useIdentity(alice)
            try store.author(post("after the start"), in: lobby.id, by: alice, nowMillis: Fixtures.now())
            var factory = OpFactory()
            #expect(try store.apply(factory.make(post("carol's"), in: lobby.id, by: carol), nowMillis: Fixtures.now()) == .applied)
            try ReplicaStore(path: path).author(post("from another process"), in: lobby.id, by: alice, nowMillis: Fixtures.now())
            try store.refreshAfterExternalWrite()
            try store.author(post("after the other process"), in: lobby.id, by: alice, nowMillis: Fixtures.now())
            // What sessions read for a summary, a WANT and the newest ops.
            #expect(try store.log.heads(lobby.id).count == 3 && store.log.digest(lobby.id) == PartitionDigest(heads: store.log.heads(lobby.id)))
            #expect(try store.log.ops(in: lobby.id, author: bob.id, fromSeq: UInt64(logged) - 9, limit: 10).count == 10)
            #expect(try store.log.ops(afterRowID: store.log.latestOpRowID() - 3).ops.count == 3)

            let scans = store.database.statementCounts(.fullScanSteps)
            #expect(scans.values.allSatisfy { $0 < logged / 10 }, "rows stepped over in full scans, by statement: \(scans)")
        }
    }

    /// `message(_:)` answers every web post, edit and reaction, and an edit's target is found
    /// on the node's thread: they read the whole room (its history, or all its messages) where
    /// one row was wanted. Now one message is its history entry, a recent one is found without
    /// reading the room, and a page of history has the reactions the whole history gives it.
    @Test func oneMessageByID_isItsHistoryEntry_andARecentOneIsFoundWithoutReadingTheRoom() throws {
        let store = try Fixtures.store(partitions: [lobby])
        let roomSize = 2_000
        let older = try store.authorAll((0..<roomSize).map { post("bob's \($0)") }, in: lobby.id, by: bob, nowMillis: Fixtures.now())
        let mine = try store.author(post("alice's"), in: lobby.id, by: alice, nowMillis: Fixtures.now(1))
        /// Virtual-machine steps of the store's cached statements while `body` runs.
        func steps(_ body: () throws -> Void) throws -> Int {
            let before = store.database.statementCounts(.virtualMachineSteps)
            try body()
            return store.database.statementCounts(.virtualMachineSteps).reduce(0) { $0 + $1.value - (before[$1.key] ?? 0) }
        }
        let editSteps = try steps {
            try store.author(.edit(target: mine.id, text: "alice's, edited"), in: lobby.id, by: alice, nowMillis: Fixtures.now(2))
        }
        try store.author(.react(target: mine.id, emoji: "👍", on: true), in: lobby.id, by: bob, nowMillis: Fixtures.now(3))
        try store.author(.react(target: older[0].id, emoji: "🎉", on: true), in: lobby.id, by: alice, nowMillis: Fixtures.now(4))
        try store.author(.react(target: older[roomSize - 1].id, emoji: "🎉", on: true), in: lobby.id, by: alice, nowMillis: Fixtures.now(4))
        try store.author(.react(target: older[roomSize - 1].id, emoji: "👍", on: true), in: lobby.id, by: bob, nowMillis: Fixtures.now(4))
        let task = try store.author(.taskCreate(title: "sweep the hall", owner: nil), in: lobby.id, by: alice, nowMillis: Fixtures.now(5))

        var found: (partition: PartitionID, message: MessageView)?
        let lookupSteps = try steps { found = try store.views.message(mine.id) }
        let history = try store.views.history(lobby.id)
        #expect(found?.partition == lobby.id)
        #expect(found?.message == history.first { $0.id == mine.id })
        #expect(found?.message.text == "alice's, edited" && found?.message.edited == true && found?.message.reactions == ["👍": [bob.id]])
        #expect(try store.views.message(older[0].id)?.message == history.first { $0.id == older[0].id })
        // A page reads its messages' reactions one by one, the whole history the room's at once.
        #expect(try store.views.history(lobby.id, limit: 3) == Array(history.suffix(3)))
        #expect(history.last { $0.id == older[roomSize - 1].id }?.reactions == ["🎉": [alice.id], "👍": [bob.id]])
        #expect(try store.views.message(OpID(Bytes32(w0: 1, w1: 2, w2: 3, w3: 4))) == nil)
        #expect(try store.views.task(task.id)?.task == store.views.tasks(lobby.id).first)
        #expect(try store.views.task(mine.id) == nil)
        // Each a few rows' work (an edit also stores its op, head and view rows), not the room's.
        #expect(lookupSteps < roomSize / 4 && editSteps < roomSize / 4, "steps: the lookup \(lookupSteps), the edit \(editSteps)")
    }

    /// Pages of history walk back (and forward) through the whole of it in display order, ties of
    /// HLC broken by author and seq as in one read; `before` and `after` must be messages of the
    /// partition.
    @Test func historyPages_walkBackAndForwardThroughTheWholeHistory_inItsOrder() throws {
        let store = try Fixtures.store(partitions: [lobby])
        let authors = (2..<5).map { Fixtures.identity(UInt8($0)) }
        var factory = OpFactory()
        for round in 0..<12 {
            // Three authors at one HLC (each op ticks the factory's clock; the offsets take it back).
            for (index, author) in authors.enumerated() {
                let op = factory.make(post("\(round).\(index)"), in: lobby.id, by: author, hlcOffset: -Int64(index))
                #expect(try store.apply(op, nowMillis: Fixtures.now()) == .applied)
            }
        }
        let whole = try store.views.history(lobby.id)
        #expect(whole.count == 36)
        var walked: [MessageView] = []
        var before: OpID?
        while true {
            let page = try store.views.history(lobby.id, limit: 5, before: before)
            walked.insert(contentsOf: page, at: 0)
            guard page.count == 5, let oldest = page.first else { break }
            before = oldest.id
        }
        #expect(walked.map(\.id) == whole.map(\.id))
        // And forward from the first, page by page with `after`.
        var forward = [whole[0]]
        while let newest = forward.last {
            let page = try store.views.history(lobby.id, limit: 5, after: newest.id)
            forward += page
            if page.count < 5 { break }
        }
        #expect(forward.map(\.id) == whole.map(\.id))
        #expect(try store.views.history(lobby.id, after: whole[30].id).map(\.id) == whole[31...].map(\.id))
        // `from` re-reads a window in place: its first message and those after it.
        #expect(try store.views.history(lobby.id, limit: 4, from: .from(whole[7].id)).map(\.id) == whole[7..<11].map(\.id))
        #expect(try store.views.history(lobby.id, limit: 4, from: .from(whole[0].id)).map(\.id) == whole[0..<4].map(\.id))
        #expect(throws: StoreError.self) { try store.views.history(lobby.id, limit: 5, before: OpID(Bytes32(w0: 1, w1: 2, w2: 3, w3: 4))) }
        #expect(throws: StoreError.self) { try store.views.history(lobby.id, limit: 5, after: OpID(Bytes32(w0: 1, w1: 2, w2: 3, w3: 4))) }
        let elsewhere = PartitionDescriptor.room(RoomName("#elsewhere")!)
        try store.log.ensurePartition(elsewhere, joined: true)
        #expect(throws: StoreError.self) { try store.views.history(elsewhere.id, limit: 5, before: whole[0].id) }
    }

    /// The first unread message: after the marker, not the reader's own, not deleted, in display
    /// order; none when everything is read.
    @Test func firstUnread_isTheFirstMessageAfterTheMarker_byAnother() throws {
        let store = try Fixtures.store(partitions: [lobby])
        let bob = Fixtures.identity(7)
        var factory = OpFactory()
        var ops: [Replica.Operation] = []
        for (text, author) in [("old", bob), ("mine", alice), ("new 1", bob), ("new 2", bob)] {
            let op = factory.make(post(text), in: lobby.id, by: author)
            #expect(try store.apply(op, nowMillis: Fixtures.now()) == .applied)
            ops.append(op)
        }
        #expect(try store.views.firstUnread(lobby.id, reader: alice.id, after: nil) == ops[0].id)
        #expect(try store.views.firstUnread(lobby.id, reader: alice.id, after: ops[0].hlc) == ops[2].id, "her own message is never unread")
        #expect(try store.views.firstUnread(lobby.id, reader: alice.id, after: ops[3].hlc) == nil)
    }

    @Test func opsSinceMark_areTheRowsTheWriteStored_orNilWhenARollbackANewPartitionOrAnotherProcessCouldHideSome() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/parley.db"
            let store = try ReplicaStore(path: path)
            try store.log.ensurePartition(lobby, joined: true)
            try store.author(post("before"), in: lobby.id, by: alice, nowMillis: Fixtures.now())
            let before = try store.log.latestOpRowID()

            store.log.markOpInserts()
            let first = try store.author(post("one"), in: lobby.id, by: alice, nowMillis: Fixtures.now())
            let second = try store.author(post("two"), in: lobby.id, by: alice, nowMillis: Fixtures.now())
            #expect(store.log.opCountSinceMark == 2)
            let written = try #require(store.log.takeOpsSinceMark())
            #expect(written.ops.map(\.id) == [first.id, second.id])
            #expect(written.ops.map(\.id) == (try store.log.ops(afterRowID: before).ops.map(\.id)))
            #expect(written.lastRowID == (try store.log.latestOpRowID()))
            #expect(written.dataVersion == (try store.dataVersion))
            #expect(store.log.takeOpsSinceMark() == nil, "the watch ends when taken")

            // Not watched: an op stored between writes is kept nowhere.
            try store.author(post("unwatched"), in: lobby.id, by: alice, nowMillis: Fixtures.now())
            #expect(store.log.opCountSinceMark == nil)

            // A write that stores nothing reports no ops and no data_version.
            store.log.markOpInserts()
            let empty = try #require(store.log.takeOpsSinceMark())
            #expect(empty.ops.isEmpty && empty.dataVersion == nil && empty.lastRowID == nil)

            // A savepoint rolled back inside a committed write: the list could hold an undone op.
            struct Abort: Error {}
            store.log.markOpInserts()
            try store.inOneTransaction {
                try store.author(post("kept"), in: lobby.id, by: alice, nowMillis: Fixtures.now())
                _ = try? store.inOneTransaction { () throws -> Void in
                    try store.author(post("undone"), in: lobby.id, by: alice, nowMillis: Fixtures.now())
                    throw Abort()
                }
            }
            #expect(store.log.opCountSinceMark == nil)
            #expect(store.log.takeOpsSinceMark() == nil)

            // A new partition: the node must list it to its peers, which the ops alone do not say.
            store.log.markOpInserts()
            let general = try store.log.ensurePartition(.room(RoomName("#general")!), joined: true)
            try store.author(post("new room"), in: general.id, by: alice, nowMillis: Fixtures.now())
            #expect(store.log.takeOpsSinceMark() == nil)

            // Another process's commit before the write moves the data_version the write reports.
            let versionBefore = try store.dataVersion
            let other = try ReplicaStore(path: path)
            try other.author(post("from bob"), in: lobby.id, by: bob, nowMillis: Fixtures.now())
            store.log.markOpInserts()
            try store.author(post("after bob"), in: lobby.id, by: alice, nowMillis: Fixtures.now())
            let afterOther = try #require(store.log.takeOpsSinceMark())
            #expect(afterOther.ops.count == 1)
            #expect(afterOther.dataVersion != versionBefore)

            // Another process's commit between two of the write's transactions: its row lies
            // among the write's, so the list cannot stand for every row up to its last.
            store.log.markOpInserts()
            try store.author(post("first half"), in: lobby.id, by: alice, nowMillis: Fixtures.now())
            try other.author(post("bob between"), in: lobby.id, by: bob, nowMillis: Fixtures.now())
            try store.author(post("second half"), in: lobby.id, by: alice, nowMillis: Fixtures.now())
            #expect(store.log.takeOpsSinceMark() == nil)
        }
    }

    @Test func opHeadAndViews_commitTogether_orNotAtAll() throws {
        var factory = OpFactory()
        let op = factory.make(post("all or nothing"), in: lobby.id, by: alice)
        let store = try Fixtures.store(partitions: [lobby])
        struct Crash: Error {}
        #expect(throws: Crash.self) {
            try store.database.transaction {
                #expect(try store.apply(op, nowMillis: Fixtures.now()) == .applied)
                throw Crash()  // the process dies before the outer commit
            }
        }
        #expect(try store.log.opCount(lobby.id) == 0)
        #expect(try store.log.heads(lobby.id).isEmpty)
        #expect(try store.views.history(lobby.id).isEmpty)
        #expect(try store.apply(op, nowMillis: Fixtures.now()) == .applied)
    }

    @Test func authoring_buildsAValidChain_andTheClockNeverGoesBack() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/parley.db"
            var last: HLC
            do {
                let store = try ReplicaStore(path: path)
                try store.log.ensurePartition(lobby, joined: true)
                let first = try store.author(post("one"), in: lobby.id, by: alice, nowMillis: Fixtures.now(1000))
                let second = try store.author(post("two"), in: lobby.id, by: alice, nowMillis: Fixtures.now(1000))
                #expect(second.seq == first.seq + 1 && second.prev == first.id && second.hlc > first.hlc)
                last = second.hlc
            }
            // A wall clock that went backwards after a restart still gives a later HLC.
            let store = try ReplicaStore(path: path)
            let third = try store.author(post("three"), in: lobby.id, by: alice, nowMillis: Fixtures.now(0))
            #expect(third.hlc > last)
            #expect(third.seq == 3)
        }
    }

    @Test func authoring_refusesWhatARemoteReplicaWouldRefuse() throws {
        let store = try Fixtures.store(partitions: [lobby])
        let bobs = try store.author(post("bob's"), in: lobby.id, by: bob, nowMillis: Fixtures.now())
        #expect(throws: StoreError.rejected(.rule(.notAuthorOfTarget))) {
            try store.author(.edit(target: bobs.id, text: "mine now"), in: lobby.id, by: alice, nowMillis: Fixtures.now())
        }
        #expect(throws: StoreError.invalidInput("message text is empty")) {
            try store.author(post(""), in: lobby.id, by: alice, nowMillis: Fixtures.now())
        }
        #expect(try store.log.heads(lobby.id).count == 1)
    }

    @Test func editDeleteAndReactions_showInHistory() throws {
        let store = try Fixtures.store(partitions: [lobby])
        let now = Fixtures.now()
        let hello = try store.author(post("helo"), in: lobby.id, by: alice, nowMillis: now)
        let gone = try store.author(post("oops"), in: lobby.id, by: alice, nowMillis: now)
        try store.author(.edit(target: hello.id, text: "hello"), in: lobby.id, by: alice, nowMillis: now)
        try store.author(.delete(target: gone.id), in: lobby.id, by: alice, nowMillis: now)
        // A deleted message is not edited: no delete would erase the edit's words.
        #expect(throws: StoreError.self) { try store.author(.edit(target: gone.id, text: "too late"), in: lobby.id, by: alice, nowMillis: now) }
        try store.author(.react(target: hello.id, emoji: "👍", on: true), in: lobby.id, by: bob, nowMillis: now)
        try store.author(.react(target: hello.id, emoji: "🎉", on: true), in: lobby.id, by: bob, nowMillis: now)
        try store.author(.react(target: hello.id, emoji: "🎉", on: false), in: lobby.id, by: bob, nowMillis: now)
        let history = try store.views.history(lobby.id)
        #expect(history.map(\.text) == ["hello", ""])
        #expect(history[0].edited && !history[0].deleted)
        #expect(history[1].deleted)
        #expect(history[0].reactions == ["👍": [bob.id]])
    }

    @Test func tasks_mergeFieldByField_andDeleteIsFinal() throws {
        let store = try Fixtures.store(partitions: [lobby])
        let now = Fixtures.now()
        let task = try store.author(.taskCreate(title: "ship it", owner: nil), in: lobby.id, by: alice, nowMillis: now)
        try store.author(.taskUpdate(target: task.id, title: nil, status: .inProgress, owner: .set(bob.id)), in: lobby.id, by: bob, nowMillis: now + 1)
        try store.author(.taskUpdate(target: task.id, title: "ship it now", status: nil, owner: .unchanged), in: lobby.id, by: alice, nowMillis: now + 2)
        var tasks = try store.views.tasks(lobby.id)
        #expect(tasks.count == 1)
        #expect(tasks[0].title == "ship it now" && tasks[0].status == .inProgress && tasks[0].owner == bob.id)
        try store.author(.taskDelete(target: task.id), in: lobby.id, by: bob, nowMillis: now + 3)
        try store.author(.taskUpdate(target: task.id, title: nil, status: .complete, owner: .unchanged), in: lobby.id, by: alice, nowMillis: now + 4)
        tasks = try store.views.tasks(lobby.id)
        #expect(tasks.isEmpty)
    }

    @Test func unreadCounts_comeFromReadMarkers() throws {
        let store = try Fixtures.store(partitions: [lobby, .ownData(owner: alice.id)])
        let now = Fixtures.now()
        try store.author(post("mine"), in: lobby.id, by: alice, nowMillis: now)
        try store.author(post("one"), in: lobby.id, by: bob, nowMillis: now + 1)
        let two = try store.author(post("two"), in: lobby.id, by: bob, nowMillis: now + 2)
        #expect(try store.views.unreadCount(lobby.id, reader: alice.id) == 2)
        let newest = try #require(try store.views.newestMessageHLC(lobby.id))
        #expect(newest == two.hlc)
        try store.author(.readMarker(partition: lobby.id, position: newest), in: PartitionDescriptor.ownData(owner: alice.id).id, by: alice, nowMillis: now + 3)
        #expect(try store.views.unreadCount(lobby.id, reader: alice.id) == 0)
        try store.author(post("three"), in: lobby.id, by: bob, nowMillis: now + 4)
        #expect(try store.views.unreadCount(lobby.id, reader: alice.id) == 1)
    }

    @Test func profiles_lastWriteByTheAuthorWins_fieldByField() throws {
        let store = try Fixtures.store()
        let directory = PartitionDescriptor.directory.id
        try store.author(
            .profile(subject: alice.id, nick: "alice", displayName: "Alice", status: nil, presence: nil, avatar: nil), in: directory, by: alice,
            nowMillis: Fixtures.now())
        try store.author(
            .profile(subject: alice.id, nick: nil, displayName: nil, status: "at lunch", presence: .away, avatar: nil), in: directory, by: alice,
            nowMillis: Fixtures.now())
        let profile = try #require(try store.directory.profile(alice.id))
        #expect(profile.nick == "alice" && profile.displayName == "Alice" && profile.status == "at lunch" && profile.presence == .away)
    }

    @Test func chainBatchedApply_verifiesOneSignaturePerRun_andStillCatchesTampering() throws {
        var factory = OpFactory()
        var ops = (1...50).map { factory.make(post("m\($0)"), in: lobby.id, by: alice) }
        let clean = try Fixtures.store(partitions: [lobby])
        #expect(try clean.apply(ops, nowMillis: Fixtures.now()).allSatisfy { $0 == .applied })
        // A changed body in the middle of a run: the ops before it apply, it is refused, the rest wait.
        var bytes = ops[20].encoded
        bytes[bytes.count - 1] ^= 1
        ops[20] = try Operation(encoded: bytes)
        let store = try Fixtures.store(partitions: [lobby])
        let outcomes = try store.apply(ops, nowMillis: Fixtures.now())
        #expect(outcomes[..<20].allSatisfy { $0 == .applied })
        #expect(outcomes[20] == .rejected(.invalid(.bodyHashMismatch)))
        #expect(outcomes[21...].allSatisfy { $0 == .pending(missingFrom: 21) })
        #expect(try store.log.opCount(lobby.id) == 20)
    }
}
