import Foundation
import Identity
import Replica
import SQLite
import Store
import TestSupport
import Testing

/// Salvage (issue 39): with a few damaged pages `history` and `export` refuse outright; `parley
/// salvage` saves every op on the intact pages, verified, into an export file that `parley import`
/// takes into a fresh database, and `parley doctor` points to it.
@Suite(.onCommandThreads) struct SalvageTests {
    static let rooms = [RoomName("lobby")!, RoomName("field")!]

    /// A store with messages in two rooms by this user and two peers (six chains), pages of its op
    /// log and of its messages overwritten in the middle of the file: every op on an intact page
    /// is saved and verified, and the fresh store holds every message whose chain is whole up to
    /// it (a chain that lost an op waits for a peer to send it).
    @Test func salvage_ofDamagedPages_savesEveryOpOnIntactPages_andImportsIntoAFreshStore() throws {
        try withSandbox { sandbox in
            sandbox.initialize()
            let database = sandbox.dataDir + "/parley.db"
            let me = try KeyFile.load(at: sandbox.dataDir + "/identity.key")
            let peers = [Fixtures.identity(1), Fixtures.identity(2)]
            let filler = String(repeating: "field notes ", count: 12)
            var factory = OpFactory(startMillis: Fixtures.now())
            do {
                let store = try NodeStore.open(sandbox.dataDir)
                for room in Self.rooms { try store.log.ensurePartition(.room(room), joined: true) }
                for index in 0..<60 {
                    for room in Self.rooms {
                        let id = PartitionDescriptor.room(room).id
                        try store.author(post("mine \(room.value) \(index) \(filler)"), in: id, by: me, nowMillis: Fixtures.now(UInt64(index)))
                        for (number, peer) in peers.enumerated() {
                            let op = factory.make(post("peer\(number) \(room.value) \(index) \(filler)"), in: id, by: peer)
                            #expect(try store.apply(op, nowMillis: Fixtures.now()) == .applied)
                        }
                    }
                }
            }  // closed: every page is in the file, no WAL
            let (total, lost) = try Self.damage(database)
            #expect(lost > 0 && lost < total / 4, "\(lost) of \(total) ops on the damaged pages")

            // Today's commands refuse the whole file; the doctor names the way out.
            for room in Self.rooms { expectError(sandbox.parley("history", "--room", room.value, "--json"), exitCode: 1, "is damaged") }
            expectError(sandbox.parley("export", "--out", sandbox.root + "/all.parley"), exitCode: 1, "is damaged")
            let doctor = sandbox.parley("doctor")
            #expect(doctor.exitCode == 1 && doctor.stdout.contains("parley salvage --out FILE"), "\(doctor)")

            let rescue = sandbox.root + "/rescue.parley"
            let salvage = sandbox.parley("salvage", "--out", rescue, "--json")
            expectSuccess(salvage)
            let report = salvage.jsonArray().first ?? [:]
            let saved = try Self.ops(in: rescue)
            #expect(report["ops"] as? Int == total - lost, "every op on an intact page is saved: \(salvage)")
            #expect(saved.count == total - lost)
            #expect((report["unreadable_op_ranges"] as? [Any])?.isEmpty == false, "\(salvage)")
            #expect(saved.allSatisfy { (try? $0.verify()) != nil })
            // What an import can take: each chain up to its first lost op.
            let whole = Self.wholeChainPrefixes(saved)
            #expect(report["ops_after_gap"] as? Int == saved.count - whole.count, "\(salvage)")

            // Into a fresh database, with the same identity: the damaged file moved away.
            for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: database + suffix) {
                try FileManager.default.moveItem(atPath: database + suffix, toPath: sandbox.root + "/damaged.db" + suffix)
            }
            // The ops after a lost one are refused by name, so the import fails, having taken the rest.
            let imported = sandbox.parley("import", rescue, "--json")
            #expect(imported.exitCode == 1, "\(imported)")
            #expect(imported.stderr.contains("earlier ops missing") && imported.stderr.contains("import it again once a peer"), "\(imported)")
            let counts = imported.jsonArray().first ?? [:]
            #expect(counts["applied"] as? Int == whole.count, "\(imported)")
            #expect(counts["refused"] as? Int == saved.count - whole.count, "only the ops after a lost one wait: \(imported)")
            var shown: Set<String> = []
            for room in Self.rooms { shown.formUnion(StorageFaultTests.texts(sandbox, room: room.value)) }
            let expected = Set(
                whole.compactMap { op -> String? in
                    guard case .post(let text, _, _, _)? = try? OperationBody(type: op.type, decoding: op.body) else { return nil }
                    return text
                })
            #expect(shown == expected, "the fresh store shows every message whose chain is whole up to it")
            let sound = sandbox.parley("doctor")
            #expect(sound.exitCode == 0 && sound.stdout.contains("every page read back sound"), "\(sound)")
            // The moved file can be salvaged by name as well.
            expectSuccess(sandbox.parley("salvage", "--out", sandbox.root + "/again.parley", "--database", sandbox.root + "/damaged.db"))
            print(
                "SalvageTests: \(total) ops, \(lost) on damaged pages; salvaged \(saved.count) (\(report["unreadable_op_ranges"] ?? "")); "
                    + "the fresh store took \(whole.count) (\(saved.count - whole.count) follow a lost op); history shows \(shown.count) of "
                    + "\(Self.rooms.count * 60 * 3) messages")
        }
    }

    /// Overwrites three leaf pages of the op log (at a third, a half and two thirds of it, in row
    /// order) and two of the messages view (the middle), never page 1. Returns the ops the file
    /// held and how many sat on the overwritten pages.
    static func damage(_ path: String) throws -> (total: Int, lost: Int) {
        let database = try Database(path: path, mode: .readOnly, cipherKey: try NodeStore.key((path as NSString).deletingLastPathComponent)?.bytes)
        let total: Int = try database.scalar("SELECT count(*) FROM ops") ?? 0
        let pageSize: Int = try database.scalar("PRAGMA page_size") ?? 0
        func leaves(_ table: String) throws -> [(page: Int, cells: Int)] {
            try database.prepare("SELECT pageno, ncell FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY path").rows(.text(table)) {
                ($0.int(0), $0.int(1))
            }
        }
        let opLeaves = try leaves("ops")
        let messageLeaves = try leaves("messages")
        database.close()
        let hit = [opLeaves.count / 3, opLeaves.count / 2, 2 * opLeaves.count / 3].map { opLeaves[$0] }
        let pages = hit.map(\.page) + messageLeaves.dropFirst(messageLeaves.count / 2).prefix(2).map(\.page)
        #expect(!pages.contains(1) && opLeaves.count > 20)
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        for page in pages {
            for offset in (page - 1) * pageSize..<page * pageSize { bytes[offset] = UInt8(truncatingIfNeeded: offset &* 31 &+ 0x55) }
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return (total, hit.reduce(0) { $0 + $1.cells })
    }

    /// The ops of an export file (which must be complete).
    static func ops(in path: String) throws -> [Replica.Operation] {
        let handle = try #require(FileHandle(forReadingAtPath: path))
        defer { try? handle.close() }
        let reader = try OpArchive.Reader { Array(try handle.read(upToCount: $0) ?? Data()) }
        var ops: [Replica.Operation] = []
        while let record = try reader.next() {
            if case .operation(let op) = record { ops.append(op) }
        }
        return ops
    }

    /// Each chain's ops from seq 1 on, up to the first one missing.
    static func wholeChainPrefixes(_ ops: [Replica.Operation]) -> [Replica.Operation] {
        Dictionary(grouping: ops) { "\($0.partition.text) \($0.author.text)" }.values.flatMap { chain in
            var next: UInt64 = 1
            return chain.sorted { $0.seq < $1.seq }.prefix { op in
                defer { next += 1 }
                return op.seq == next
            }
        }
    }
}

extension StorageFaultTests {
    /// Texts of a room in order, through the real binary.
    static func texts(_ sandbox: Sandbox, room: String, sourceLocation: SourceLocation = #_sourceLocation) -> [String] {
        let run = sandbox.parley("history", "--room", room, "--json", sourceLocation: sourceLocation)
        expectSuccess(run, sourceLocation: sourceLocation)
        return run.jsonArray(sourceLocation: sourceLocation).compactMap { $0["text"] as? String }
    }
}
