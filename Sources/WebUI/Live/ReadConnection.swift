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
/// Opened at the first read (the node has made the file by then); where the file cannot be
/// opened so (an in-memory store) reads go to the node's executor as before.
final class ReadConnection: @unchecked Sendable {
    // @unchecked: `store` and `opened` are touched only on `queue`.
    private let queue = DispatchQueue(label: "parley.web.reads")
    private let path: String
    private let identity: Identity
    private var store: ReplicaStore?
    private var opened = false

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

    /// The connection, opened on first use (on `queue`).
    private func openedStore() -> ReplicaStore? {
        if !opened {
            opened = true
            if path != ":memory:", FileManager.default.fileExists(atPath: path), let store = try? ReplicaStore(readOnlyPath: path) {
                // The node's identity opens what the node's own store opened: keys of private
                // conversations, for their attachments.
                if (try? store.useIdentity(identity)) != nil { self.store = store } else { store.database.close() }
            }
        }
        return store
    }

    /// Closes the connection (on `queue`, after every read queued before).
    func close() {
        queue.async {
            self.store?.database.close()
            self.store = nil
        }
    }
}
