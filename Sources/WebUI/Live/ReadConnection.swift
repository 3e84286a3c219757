import Dispatch
import Foundation
import Identity
import NodeRuntime
import Store

/// A read-only connection to the node's store on a thread of its own, for the web API's reads.
/// A page of a long room takes tens of milliseconds to read; on the node's executor (`Node.read`)
/// every link's ops would wait behind it, and a page refreshes at every change of a busy room.
/// WAL lets this connection read beside the node's writes: each read sees one committed state,
/// including every write the node finished before it began (a post, then its page).
///
/// Opened at the first read that finds the node's file; where there is none to open (an
/// in-memory store) reads go to the node's executor as before.
final class ReadConnection: @unchecked Sendable {
    // @unchecked: `store` and `closed` are touched only on `queue`.
    private let queue = DispatchQueue(label: "parley.web.reads")
    private let path: String
    private let identity: Identity
    private var store: ReplicaStore?
    private var closed = false

    init(path: String, identity: Identity) {
        self.path = path
        self.identity = identity
    }

    /// Runs `body` on this connection's thread over one committed state of the store; nil when
    /// there is no such connection (the caller reads on the node's executor).
    func read<T: Sendable>(_ body: @escaping @Sendable (ReplicaStore) throws -> T) async throws -> T? {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(
                    with: Result {
                        guard let store = self.openedStore() else { return nil }
                        return try store.readingOneState { try body(store) }
                    })
            }
        }
    }

    /// The connection, opened at the first read that finds the file (on `queue`); nil for an
    /// in-memory store, and after `close`.
    private func openedStore() -> ReplicaStore? {
        guard store == nil, !closed, path != ":memory:", FileManager.default.fileExists(atPath: path),
            let key = try? StoreKeyFile.loadIfPresent(at: (path as NSString).deletingLastPathComponent + "/store.key", identity: identity),
            let opened = try? ReplicaStore(readOnlyPath: path, key: key)
        else { return store }
        // The node's identity opens what the node's own store opened: keys of private
        // conversations, for their attachments.
        guard (try? opened.useIdentity(identity)) != nil else {
            opened.database.close()
            return nil
        }
        store = opened
        return opened
    }

    /// Closes the connection (on `queue`, after every read queued before); later reads go to the
    /// node's executor.
    func close() {
        queue.async {
            self.closed = true
            self.store?.database.close()
            self.store = nil
        }
    }
}
