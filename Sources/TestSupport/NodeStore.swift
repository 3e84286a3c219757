import Foundation
import Identity
import Sodium
import Store

/// The store of a node's data directory, opened as the node opens it: through the store key
/// (`store.key`, sealed by the directory's unprotected `identity.key`, or by `identity` for a
/// node whose identity is not on disk); a directory without a store key yet gets a plain store,
/// which the node converts when it starts.
public enum NodeStore {
    /// The store key of the data directory `directory`, nil when it has none yet.
    public static func key(_ directory: String, identity: Identity? = nil) throws -> SecureBytes? {
        guard FileManager.default.fileExists(atPath: directory + "/store.key") else { return nil }
        if let identity { return try StoreKeyFile.load(at: directory + "/store.key", identity: identity) }
        return try StoreKeyFile.load(dataDirectory: directory)
    }

    /// `directory`'s `parley.db`, opened for writing with its key.
    public static func open(_ directory: String, identity: Identity? = nil) throws -> ReplicaStore {
        try ReplicaStore(path: directory + "/parley.db", key: key(directory, identity: identity))
    }
}
