import Identity
import Replica
import SQLite
import Sodium
import Store

/// Reads the nodes' stores directly (read-only SQLite connections, which WAL allows beside the
/// running node): digests for the convergence check, and every op's id and `received_at` for
/// the loss check and latencies. Cheaper than a `parley digest` process per node per poll.
public enum StoreReader {
    /// The digest (text) of each partition in `partitions` that the store at `path` holds.
    public static func digests(path: String, partitions: Set<String>) -> [String: String] {
        guard let store = try? ReplicaStore(readOnlyPath: path, key: storeKey(path)) else { return [:] }
        defer { store.database.close() }
        var result: [String: String] = [:]
        for record in (try? store.log.partitions()) ?? [] where partitions.contains(record.id.text) {
            if let digest = try? store.log.digest(record.id) { result[record.id.text] = digest.text }
        }
        return result
    }

    /// The store key of the node whose store is at `path` (its identity is unprotected), if the
    /// store is encrypted.
    static func storeKey(_ path: String) -> SecureBytes? {
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
        return (try? StoreKeyFile.load(dataDirectory: directory)) ?? nil
    }

    /// How many chains the store holds fork proofs for.
    public static func forkedChains(path: String) -> Int {
        guard let database = try? Database(path: path, mode: .readOnly, cipherKey: storeKey(path)?.bytes) else { return 0 }
        defer { database.close() }
        return ((try? database.scalar("SELECT count(*) FROM fork_proofs", as: Int.self)) ?? nil) ?? 0
    }

    /// Every op the store holds: op id (text) → `received_at` in Unix milliseconds (the node's clock).
    public static func receivedTimes(path: String) -> [String: UInt64] {
        receivedMicros(path: path).mapValues { $0 / 1_000 }
    }

    /// The messages whose text starts with `prefix`: text → `received_at` of the op that made
    /// it, in Unix microseconds.
    public static func receivedMicrosByText(path: String, prefix: String) -> [String: UInt64] {
        guard let database = try? Database(path: path, mode: .readOnly, cipherKey: storeKey(path)?.bytes) else { return [:] }
        defer { database.close() }
        let rows =
            (try? database.prepare(
                "SELECT messages.text, ops.received_at FROM messages JOIN ops ON ops.oid = messages.oid WHERE substr(messages.text, 1, ?) = ?"
            ).rows(.integer(Int64(prefix.count)), .text(prefix)) { row -> (String, UInt64) in (row.text(0), UInt64(max(0, row.int64(1)))) })
            ?? []
        return Dictionary(rows, uniquingKeysWith: { first, _ in first })
    }

    /// Every op the store holds: op id (text) → `received_at` in Unix microseconds (the node's clock).
    public static func receivedMicros(path: String) -> [String: UInt64] {
        guard let database = try? Database(path: path, mode: .readOnly, cipherKey: storeKey(path)?.bytes) else { return [:] }
        defer { database.close() }
        let rows =
            (try? database.prepare("SELECT header, received_at FROM ops").rows { row -> (String, UInt64) in
                let header = row.blob(0)
                let id = OpID(bytes: GenericHash.hash(Array(header.prefix(Operation.signedBytes))))?.text ?? ""
                return (id, UInt64(max(0, row.int64(1))))
            }) ?? []
        return Dictionary(rows, uniquingKeysWith: { first, _ in first })
    }
}

/// Whether the replicas agree: for each partition, every node that should hold it has the same
/// digest. Returns the partitions that differ (empty: converged).
func divergedPartitions(digests: [[String: String]], partitions: [String], holders: (String) -> Set<Int>) -> [String] {
    partitions.filter { partition in
        let values = holders(partition).map { digests.indices.contains($0) ? digests[$0][partition] : nil }
        guard let first = values.first else { return false }
        return first == nil || values.contains { $0 != first }
    }
}
