import Foundation
import TestSupport
import Testing

@testable import SQLite

/// `checkpointInBackground`: checkpoints leave the committing thread, the WAL still restarts and
/// stays bounded, and nothing committed is lost.
@Suite struct WALCheckpointerTests {
    /// A file database in `dir` with checkpoints in the background and an empty table `t`.
    private func openDatabase(in dir: URL, pages: Int32, jitter: Double = 0, backstopPages: Int32) throws -> (url: URL, db: Database) {
        let url = dir.appendingPathComponent("node.db")
        let db = try Database(path: url.path)
        try db.checkpointInBackground(pages: pages, jitter: jitter, backstopPages: backstopPages)
        try db.execute("CREATE TABLE t(k INTEGER PRIMARY KEY, b BLOB NOT NULL) STRICT")
        return (url, db)
    }

    /// One row per transaction, as the node applies ops.
    private func insertRows(_ count: Int, into db: Database, from start: Int = 0) throws {
        for k in start..<start + count {
            try db.execute("INSERT INTO t(k, b) VALUES (?, ?)", .integer(Int64(k)), .blob([UInt8](repeating: UInt8(k & 0xFF), count: 300)))
        }
    }

    /// Keeps committing one row at a time, as a busy node does, from row `k` until the WAL has
    /// been wholly copied and the next commit started it again from its beginning (its length
    /// drops), for at most 30 s. Returns whether it restarted, the next row, and the longest WAL.
    private func commitUntilTheWALRestarts(_ db: Database, from k: Int) throws -> (restarted: Bool, next: Int, longest: Int) {
        let deadline = Date().addingTimeInterval(30)
        var longest = 0
        var k = k
        while Date() < deadline {
            try insertRows(1, into: db, from: k)
            k += 1
            let frames = db.checkpointProgress?.walFrames ?? 0
            if frames < longest { return (true, k, longest) }
            longest = max(longest, frames)
            if k % 50 == 0 { Thread.sleep(forTimeInterval: 0.001) }  // room for the checkpoint thread on a busy machine
        }
        return (false, k, longest)
    }

    @Test func backgroundCheckpoint_copiesTheWALAndLetsItRestart() throws {
        try withTemporaryDirectory { dir in
            // No backstop within reach: every copy below is the background's (or the writer's catch-up after it).
            let (url, db) = try openDatabase(in: dir, pages: 64, backstopPages: 1_000_000)
            let sizeBefore = fileSize(url) ?? 0
            try insertRows(200, into: db)
            let (restarted, k, longest) = try commitUntilTheWALRestarts(db, from: 200)
            #expect(restarted, "the WAL never restarted within 30 s (longest \(longest) frames)")
            #expect((fileSize(url) ?? 0) > sizeBefore, "no page reached the database file")
            #expect(try db.scalar("SELECT count(*) FROM t", as: Int.self) == k)
        }
    }

    /// Nodes on one host that hold the same ops must not all checkpoint at once: each run of the
    /// WAL draws its own threshold, within a quarter of `pages` either way.
    @Test func jitter_drawsEachRunOfTheWALsThreshold_withinAQuarterEitherWay() throws {
        let seed = SeededRandom.seedFromEnvironment()
        var random = SeededRandom(seed: seed)
        let draws = (0..<1_000).map { _ in WALCheckpointer.threshold(pages: 4_096, jitter: 0.5, using: &random) }
        #expect(draws.allSatisfy { (3_072...5_120).contains($0) }, "seed \(seed): \(draws.min()!)–\(draws.max()!)")
        #expect(Set(draws).count > 500, "seed \(seed): \(Set(draws).count) distinct thresholds")
        #expect((0..<10).allSatisfy { _ in WALCheckpointer.threshold(pages: 4_096, jitter: 0, using: &random) == 4_096 })

        try withTemporaryDirectory { dir in
            let (_, db) = try openDatabase(in: dir, pages: 64, jitter: 0.5, backstopPages: 1_000_000)
            var thresholds = [try #require(db.checkpointThreshold)]
            var k = 0
            for run in 1...4 {
                let (restarted, next, longest) = try commitUntilTheWALRestarts(db, from: k)
                try #require(restarted, "run \(run): the WAL never restarted within 30 s (longest \(longest) frames)")
                k = next
                thresholds.append(try #require(db.checkpointThreshold))
            }
            #expect(thresholds.allSatisfy { (48...80).contains($0) }, "\(thresholds)")
            // Five draws of 33 values all equal: about one chance in a million.
            #expect(Set(thresholds).count > 1, "every run of the WAL had the threshold \(thresholds[0])")
        }
    }

    @Test func backstop_boundsTheWALWhenCommitsNeverPause() throws {
        try withTemporaryDirectory { dir in
            let (url, db) = try openDatabase(in: dir, pages: 64, backstopPages: 256)
            var longest = 0
            for round in 0..<40 {
                try insertRows(100, into: db, from: round * 100)
                longest = max(longest, db.checkpointProgress?.walFrames ?? 0)
            }
            // One transaction writes a handful of frames; past 256 the writer checkpoints itself.
            #expect(longest > 0)
            #expect(longest < 256 + 16, "the WAL reached \(longest) frames past a backstop of 256")
            let walBytes = fileSize(URL(fileURLWithPath: url.path + "-wal")) ?? 0
            #expect(walBytes <= (256 + 16) * (4096 + 24) + 32, "the WAL file holds \(walBytes) bytes")
        }
    }

    @Test func close_waitsForTheCheckpoint_andKeepsEveryRow() throws {
        try withTemporaryDirectory { dir in
            let url: URL
            do {
                let (opened, db) = try openDatabase(in: dir, pages: 16, backstopPages: 1_000_000)
                url = opened
                try insertRows(2_000, into: db)
                db.close()  // a background checkpoint may be running
                #expect(throws: SQLiteError.self) { try db.execute("SELECT 1") }
            }
            // The last connection's close checkpoints and removes the WAL.
            #expect(fileSize(URL(fileURLWithPath: url.path + "-wal")) == nil)
            let reopened = try Database(path: url.path, mode: .readOnly)
            #expect(try reopened.scalar("SELECT count(*) FROM t", as: Int.self) == 2_000)
            #expect(reopened.quickCheck(limit: 1).isEmpty)
        }
    }

    @Test func memoryAndReadOnlyDatabases_areLeftAlone() throws {
        let memory = try Database(path: ":memory:")
        try memory.checkpointInBackground()
        #expect(memory.checkpointProgress == nil)
        try withTemporaryDirectory { dir in
            let path = dir.appendingPathComponent("node.db").path
            try Database(path: path).execute("CREATE TABLE t(k INTEGER PRIMARY KEY) STRICT")
            let reader = try Database(path: path, mode: .readOnly)
            try reader.checkpointInBackground()
            #expect(reader.checkpointProgress == nil)
        }
    }
}
