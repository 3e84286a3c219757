import Replica
import SQLite

/// Id listings for resolving what a person typed: commands accept a unique prefix of a message
/// or task id, so they need every id without loading whole histories.
extension Views {
    /// The ids of the messages (posts) held, in every partition, deleted ones included (a
    /// deleted message still has an id that edit/delete/react commands must recognize): all of
    /// them, or those from `low` through `high`, compared byte by byte (`Base32.prefixRange`
    /// turns a typed prefix into such a range). The range is matched inside SQLite, so a
    /// prefix does not bring every id of a long store into the process.
    public func messageIDs(from low: [UInt8] = [], through high: [UInt8] = Views.greatestID) throws -> [OpID] {
        try database.prepare("SELECT op_id FROM messages WHERE op_id BETWEEN ? AND ?").rows(.blob(low), .blob(high)) {
            OpID(bytes: $0.blob(0))
        }.compactMap { $0 }
    }

    /// The ids of the tasks that were created and not deleted, in every partition: all of them, or
    /// those from `low` through `high`, as `messageIDs(from:through:)`.
    public func taskIDs(from low: [UInt8] = [], through high: [UInt8] = Views.greatestID) throws -> [OpID] {
        try database.prepare("SELECT task_id FROM tasks WHERE task_id BETWEEN ? AND ? AND created = 1 AND deleted = 0")
            .rows(.blob(low), .blob(high)) { OpID(bytes: $0.blob(0)) }.compactMap { $0 }
    }

    /// The greatest 32-byte id, the top of the default range.
    public static let greatestID = [UInt8](repeating: 0xFF, count: 32)
}
