import SQLite
import Wire

extension Statement {
    /// Column `i` as 32 bytes read in place (ids, keys, hashes); nil for `NULL` or a blob of
    /// another length. No `[UInt8]` is made on the way, as `blob(_:)` would.
    func bytes32(_ i: Int32) -> Bytes32? {
        withUnsafeBlob(i) { $0.count == 32 ? Bytes32($0) : nil }
    }
}
