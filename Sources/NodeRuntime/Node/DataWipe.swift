import Foundation
import Identity
import SQLite

/// Panic wipe (docs/DESIGN.md §5.1, `parley wipe`, `/wipe`, the page's Wipe action): makes a data
/// directory's content unrecoverable at once, whatever the store's size, then removes its files.
///
/// Everything of value in `parley.db` is encrypted under the store key, and the store key is
/// sealed under the identity's seed: overwriting `store.key` and `identity.key` in place and
/// syncing them (`StoreKeyFile.destroy`, a few hundred bytes) is what makes the data
/// unreadable; removing the store's files afterwards takes what time the file system needs,
/// and is not what the guarantee rests on.
public enum DataWipe {
    /// The key files, destroyed first.
    public static let keyFiles = ["store.key", "identity.key", "person.key"]
    /// Other names Parley keeps in a data directory; files whose names start with `parley.db`,
    /// `store.key`, `identity.key` or `person.key` (WAL, shared memory, conversion leftovers, temporary key
    /// files) go too. Nothing else in the directory is touched.
    static let otherFiles = ["control.sock", "node.lock", "web.address", "web.secret", "chat-node.log"]
    static let prefixes = ["parley.db", "store.key", "identity.key", "person.key"]

    /// Overwrites and removes the key files of `directory` and zeroes the store keys this
    /// process holds; returns the names of the files destroyed.
    public static func destroyKeys(in directory: String) -> [String] {
        Database.forgetCipherKeys()
        return keyFiles.filter { StoreKeyFile.destroy(at: directory + "/" + $0) }
    }

    /// The names of Parley's files in `directory` (what a wipe removes).
    public static func parleyFiles(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { name in
            otherFiles.contains(name) || prefixes.contains { name.hasPrefix($0) }
        }.sorted()
    }

    /// Removes Parley's other files in `directory` (the store, its WAL, the lock, the control
    /// socket, leftovers) and the directory itself once empty; returns the names removed.
    public static func removeFiles(in directory: String) -> [String] {
        var removed: [String] = []
        for name in parleyFiles(in: directory) {
            if prefixes.contains(where: { name.hasPrefix($0) }) && keyFiles.contains(where: { name.hasPrefix($0) }) {
                _ = StoreKeyFile.destroy(at: directory + "/" + name)  // a temporary copy of a key
                removed.append(name)
            } else if unlink(directory + "/" + name) == 0 {
                removed.append(name)
            }
        }
        if (try? FileManager.default.contentsOfDirectory(atPath: directory))?.isEmpty == true { rmdir(directory) }
        return removed
    }
}
