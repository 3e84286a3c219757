import Foundation
import PowerCutVFS
import Replica
import SQLite
import Sodium
import Store
import TestSupport
import Testing

/// Power loss (issue 39): a write the node acknowledged to its author survives a power cut;
/// ops from peers may not (they send them again). Proved the way SQLite's own crash tests do:
/// the store runs on a file layer (`Tests/PowerCutVFS`) that holds every write in memory until
/// SQLite syncs it, the test cuts the power (everything unsynced is gone, nothing is flushed at
/// close), and the files are reopened through the default VFS, as the machine would find them.
/// Serialized: the power is cut for every file of the layer at once.
@Suite(.serialized) struct PowerCutTests {
    static let vfs = "parley-power-cut"
    let me = Fixtures.identity(0)
    let peer = Fixtures.identity(1)
    let lobby = PartitionDescriptor.room(RoomName("lobby")!)

    /// Own posts between batches of a peer's ops, then a last batch from the peer, then the cut:
    /// every own post is there, the file is sound, and the peer's last batch (never synced) is
    /// gone — the layer really forgets.
    @Test func powerCut_keepsEveryAcknowledgedOwnWrite() throws {
        let outcome = try cutThePower(checkpointing: false)
        #expect(outcome.peerOpsKept < outcome.peerOpsApplied, "the peer's last batch was never synced, so the cut must drop it: \(outcome)")
    }

    /// The same while the WAL is checkpointed every few commits (in the background, by the
    /// writer's catch-up, and once to a truncated WAL), so it restarts from its beginning again
    /// and again; the last own writes come after the last checkpoint, so only their own sync
    /// can keep them.
    @Test func powerCut_amidCheckpoints_keepsEveryAcknowledgedOwnWrite() throws {
        _ = try cutThePower(checkpointing: true)
    }

    /// The same with each own write made as a node makes it: its sync put off until the node has
    /// pushed the op (`Database.deferringDurableSync`), and acknowledged when that returns.
    @Test func powerCut_keepsEveryOwnWriteAcknowledgedAfterADeferredSync() throws {
        _ = try cutThePower(checkpointing: false, deferringSyncs: true)
    }

    /// The same on an encrypted store (docs/DESIGN.md §5.1), the cipher over the power-cut layer,
    /// amid checkpoints: the WAL's frames are sealed, the recovery after the cut reads them
    /// through the key, and a frame the cut tore ends the log as in a plain file.
    @Test func powerCut_ofAnEncryptedStore_keepsEveryAcknowledgedOwnWrite() throws {
        let outcome = try cutThePower(checkpointing: true, key: SecureBytes.random(32))
        #expect(outcome.peerOpsKept < outcome.peerOpsApplied, "the peer's last batch was never synced, so the cut must drop it: \(outcome)")
    }

    struct Outcome: CustomStringConvertible {
        var ownOps = 0
        var peerOpsApplied = 0
        var peerOpsKept = 0
        var syncs = 0
        var description: String { "\(ownOps) own ops, \(peerOpsKept) of \(peerOpsApplied) peer ops kept, \(syncs) syncs" }
    }

    private func cutThePower(
        checkpointing: Bool, deferringSyncs: Bool = false, key: SecureBytes? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Outcome {
        #expect(parley_power_cut_register(Self.vfs) == 0, sourceLocation: sourceLocation)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-power-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/parley.db"
        var acknowledged: [Replica.Operation] = []
        // The store as the machine had it before: made and closed normally (so on disk).
        do {
            let store = try ReplicaStore(path: path, key: key)
            try store.log.ensurePartition(lobby, joined: true)
            acknowledged.append(try store.author(post("before"), in: lobby.id, by: me, nowMillis: Fixtures.now()))
        }
        var factory = OpFactory()
        var fromPeer: [Replica.Operation] = []
        let syncsBefore = parley_power_cut_syncs()
        let filler = String(repeating: "words to fill a page or two ", count: 20)
        do {
            let store = try ReplicaStore(path: path, vfs: Self.vfs, key: key)
            // Replacing the checkpointer waits for a running checkpoint.
            func checkpoints(everyPages pages: Int32) throws { try store.database.checkpointInBackground(pages: pages, jitter: 0, backstopPages: 4 * pages) }
            if checkpointing { try checkpoints(everyPages: 24) }
            for index in 1...40 {
                if checkpointing && index == 15 {
                    try checkpoints(everyPages: 1 << 28)
                    try store.database.checkpoint()
                    try checkpoints(everyPages: 24)
                }
                // No checkpoint from here on: the last ten own writes are on disk only if their
                // commits synced the WAL.
                if checkpointing && index == 30 { try checkpoints(everyPages: 1 << 28) }
                let batch = (0..<3).map { factory.make(post("peer \(index).\($0)"), in: lobby.id, by: peer) }
                #expect(try store.apply(batch, nowMillis: Fixtures.now()) == batch.map { _ in .applied }, sourceLocation: sourceLocation)
                fromPeer += batch
                // Acknowledged: the call returned.
                let own = { try store.author(post("own \(index) \(filler)"), in: lobby.id, by: me, nowMillis: Fixtures.now(UInt64(index))) }
                acknowledged.append(try deferringSyncs ? store.database.deferringDurableSync(own) : own())
            }
            let last = (0..<5).map { factory.make(post("peer, last \($0)"), in: lobby.id, by: peer) }
            #expect(try store.apply(last, nowMillis: Fixtures.now()) == last.map { _ in .applied }, sourceLocation: sourceLocation)
            fromPeer += last
            parley_power_cut()
            store.database.close()
        }
        parley_power_restore()

        var outcome = Outcome(ownOps: acknowledged.count, peerOpsApplied: fromPeer.count, syncs: parley_power_cut_syncs() - syncsBefore)
        // What the disk holds, through the default VFS: SQLite replays the WAL's synced commits.
        let database = try Database(path: path, cipherKey: key?.bytes)
        #expect(try database.prepare("PRAGMA integrity_check").rows { $0.text(0) } == ["ok"], sourceLocation: sourceLocation)
        database.close()
        let store = try ReplicaStore(path: path, key: key)
        let lost = try acknowledged.filter { try !store.log.contains($0) }
        #expect(lost.count == 0, "\(lost.count) of \(acknowledged.count) acknowledged own ops lost in the cut", sourceLocation: sourceLocation)
        outcome.peerOpsKept = try fromPeer.filter { try store.log.contains($0) }.count
        print("PowerCutTests (checkpointing: \(checkpointing)): \(outcome), \(lost.count) own ops lost")
        // The store goes on: the next own write follows the last one kept.
        let next = try store.author(post("after the cut"), in: lobby.id, by: me, nowMillis: Fixtures.now(1_000))
        #expect(next.seq == UInt64(acknowledged.count + 1), sourceLocation: sourceLocation)
        return outcome
    }
}
