import Replica
import SQLite

/// Id listings for resolving what a person typed: commands accept a unique prefix of a message
/// or task id, so they need every id without loading whole histories.
extension ReplicaStore {
    /// The ids of all messages (posts) held, in every partition, deleted ones included (a
    /// deleted message still has an id that edit/delete/react commands must recognize).
    public func messageIDs() throws -> [OpID] {
        try database.prepare("SELECT op_id FROM messages").rows { OpID(bytes: $0.blob(0)) }.compactMap { $0 }
    }

    /// The ids of all tasks that were created and not deleted, in every partition.
    public func taskIDs() throws -> [OpID] {
        try database.prepare("SELECT task_id FROM tasks WHERE created = 1 AND deleted = 0").rows { OpID(bytes: $0.blob(0)) }
            .compactMap { $0 }
    }
}
