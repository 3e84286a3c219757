import Foundation
import Identity
import Replica
import Store
import TestSupport
import Testing

/// Helpers for conversation tests: nodes as in-memory (or file) stores with an identity, and
/// anti-entropy between them without a network.
enum Nodes {
    /// An in-memory store that holds `identity`'s keys.
    static func store(_ identity: Identity) throws -> ReplicaStore {
        let store = try Fixtures.store()
        try store.useIdentity(identity)
        return store
    }

    /// Runs `body` with a fresh temporary directory, removed afterwards.
    static func withTemporaryDirectory(_ body: (String) throws -> Void) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-conv-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try body(dir)
    }

    /// Full anti-entropy: every store learns every partition the others hold (those in `only`,
    /// when given) — carrying what it is not a member of — and ops are applied until nothing
    /// changes, as gossip between always-linked nodes would do.
    static func sync(_ stores: [ReplicaStore], only: Set<PartitionID>? = nil) throws {
        var changed = true
        var rounds = 0
        while changed && rounds < 20 {
            changed = false
            rounds += 1
            for source in stores {
                for record in try source.log.partitions() where only?.contains(record.id) ?? true {
                    let ops = try source.log.allOps(in: record.id)
                    for target in stores where target !== source {
                        if try target.log.partition(record.id) == nil { try target.log.ensurePartition(record.descriptor, joined: false) }
                        for proof in try source.log.forkProofs(record.id) where try target.forks.apply(proof) { changed = true }
                        if try target.apply(ops, nowMillis: Fixtures.now()).contains(.applied) { changed = true }
                    }
                }
            }
        }
    }

    /// The texts of a conversation's history on one store.
    static func texts(_ store: ReplicaStore, _ conversation: PartitionDescriptor) throws -> [String] {
        try store.views.history(conversation.id).map(\.text)
    }

    /// Every byte of a store's files (the database and its write-ahead log).
    static func fileBytes(_ path: String) -> Data {
        var data = Data()
        for suffix in ["", "-wal"] {
            if let bytes = FileManager.default.contents(atPath: path + suffix) { data.append(bytes) }
        }
        return data
    }
}
