import Foundation
import SQLite
import TestSupport
import Testing

/// Looking at a database file this process has open never releases the process's locks on it.
///
/// POSIX advisory locks belong to the process, and closing any descriptor of the file releases
/// them all: the SHARED lock a WAL connection holds tells a connection of another process that
/// closes that it is not the last, so it does not checkpoint and delete the `-wal` and `-shm`
/// files under ours. Another process checks here, by asking for the EXCLUSIVE lock itself.
@Suite struct FileLockTests {
    static let key = [UInt8](repeating: 0x42, count: 32)

    /// The header read while the file is open, by `fileFormat`, by a second connection's open
    /// and close, and (encrypted) by `decryptedPages`: the SHARED lock is still held after each.
    @Test(arguments: [false, true])
    func readingTheHeader_whileTheFileIsOpen_keepsTheSharedLock(encrypted: Bool) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-sqlite-locks-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/locked.db"
        let key = encrypted ? Self.key : nil
        let database = try Database(path: path, cipherKey: key)
        defer { database.close() }
        try database.execute("CREATE TABLE t(x TEXT) STRICT; INSERT INTO t VALUES ('kept')")
        #expect(try await Self.otherProcessGetsExclusiveLock(on: path, directory: directory, name: "before") == false, "the probe sees no lock to begin with")

        for _ in 0..<3 {
            #expect(Database.fileFormat(at: path) == (encrypted ? .encrypted : .plain))
        }
        #expect(try await Self.otherProcessGetsExclusiveLock(on: path, directory: directory, name: "format") == false, "fileFormat released the lock")

        let second = try Database(path: path, cipherKey: key)
        #expect(try second.scalar("SELECT x FROM t", as: String.self) == "kept")
        second.close()
        if let key { _ = try Database.decryptedPages(of: path, key: key) }
        #expect(try await Self.otherProcessGetsExclusiveLock(on: path, directory: directory, name: "second") == false, "a second open released the lock")
        try database.execute("INSERT INTO t VALUES ('still writing')")
        #expect(try database.scalar("SELECT count(*) FROM t", as: Int.self) == 2)
    }

    /// A file opened read-only before anything wrote it is still empty: `fileFormat` says so,
    /// as it did before the open, rather than guess what a writer will make of it.
    @Test func emptyFile_openReadOnly_isEmpty() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("empty.db").path
            #expect(Database.fileFormat(at: path) == .empty)
            #expect(FileManager.default.createFile(atPath: path, contents: Data()))
            let database = try Database(path: path, mode: .readOnly)
            defer { database.close() }
            #expect(Database.fileFormat(at: path) == .empty)
            #expect(Database.fileFormat(at: directory.path) == .other)
        }
    }

    /// Whether a process of its own (Python) is granted an EXCLUSIVE lock on the database at
    /// `path` as SQLite takes one: a write lock on the bytes where readers take SHARED locks.
    static func otherProcessGetsExclusiveLock(
        on path: String, directory: String, name: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> Bool {
        let python = "/usr/bin/python3"
        try #require(FileManager.default.isExecutableFile(atPath: python), "the lock probe needs \(python)", sourceLocation: sourceLocation)
        let script = """
            import fcntl, sys
            SHARED_FIRST, SHARED_SIZE = 0x40000002, 510  # sqlite3.c: PENDING_BYTE + 2, and the range
            with open(sys.argv[1], 'r+b') as f:
                try:
                    fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB, SHARED_SIZE, SHARED_FIRST, 0)
                    print('granted')
                except OSError:
                    print('refused')
            """
        let probe = try ChildProcess(executable: python, arguments: ["-c", script, path], environment: [:], captureIn: directory, name: "probe-\(name)")
        defer { probe.kill() }
        let exited = await probe.waitForExit(timeout: .seconds(30))
        try #require(exited && probe.exitStatus == 0, "the lock probe failed: \(probe.stderr)", sourceLocation: sourceLocation)
        let answer = probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        try #require(answer == "granted" || answer == "refused", "the lock probe said \(answer)", sourceLocation: sourceLocation)
        return answer == "granted"
    }
}
