import Identity
import Replica
import SQLite
import Sodium
import Wire

/// What a node can do with an attachment named by a message.
public enum AttachmentContent: Equatable, Sendable {
    /// The file's content.
    case content([UInt8])
    /// Its blob is not in this store yet (a running node fetches it from linked peers).
    case notFetched
    /// The blob is here but no key this node holds opens it.
    case cannotOpen
}

/// The blobs: attachments' and avatars' content (the `blobs` table), and which of them the
/// views name. Holds no state of its own: every answer is read from the file; opening a
/// conversation's blob takes the key ring's epoch keys.
public struct Blobs {
    let database: Database
    let log: OpLog
    let keys: KeyRing
}

/// Blobs: the content of attachments and avatars, kept by hash in the local `blobs` table (not
/// replicated as ops; nodes fetch them from peers by hash with BLOB_WANT/BLOB). In a
/// conversation the blob is the file encrypted with the epoch key (`EncryptedBlob`) and the
/// attachment's hash is the hash of those bytes: anyone can check it, only members open it, and
/// nodes serve it only to members.
extension Blobs {
    /// The largest attachment or avatar (docs/DESIGN.md §7).
    public static let maxBlobBytes = 8 << 20

    /// Keeps `data` under its BLAKE2b-256 hash (idempotent); returns the hash. Throws
    /// `StoreError.invalidInput` over `maxBlobBytes` (plus an encryption's overhead).
    @discardableResult
    public func storeBlob(_ data: [UInt8], nowMillis: UInt64) throws -> Bytes32 {
        guard data.count <= Self.maxBlobBytes + EncryptedBody.overheadBytes else {
            throw StoreError.invalidInput("the file is \(data.count) bytes, over the limit of \(Self.maxBlobBytes) (8 MiB)")
        }
        let hash = Bytes32(GenericHash.hash(data))!
        try database.cachedStatement("INSERT OR IGNORE INTO blobs(hash, size, data, stored_at) VALUES (?, ?, ?, ?)")
            .run(.blob(hash.bytes), .integer(Int64(data.count)), .blob(data), .integer(Int64(nowMillis)))
        return hash
    }

    /// The blob with this hash, if it is here.
    public func blob(_ hash: Bytes32) throws -> [UInt8]? {
        try database.cachedStatement("SELECT data FROM blobs WHERE hash = ?").rows(.blob(hash.bytes)) { $0.blob(0) }.first
    }

    /// The content of an attachment of a message in `partition`.
    public func attachmentContent(_ attachment: Attachment, in partition: PartitionID) throws -> AttachmentContent {
        guard let stored = try blob(attachment.hash) else { return .notFetched }
        guard let record = try log.partition(partition), record.descriptor.kind == .conversation || record.descriptor.kind == .privateRoom else {
            return .content(stored)
        }
        guard let epoch = EncryptedBlob.epoch(of: stored) else { return .cannotOpen }
        for key in try keys.epochKeys(pid: record.pid) where key.epoch == epoch {
            if let content = EncryptedBlob.open(stored, with: key) { return .content(content) }
        }
        return .cannotOpen
    }
}

// MARK: - Blobs between peers

extension Blobs {
    /// Blobs this node's views name but it does not hold, with the partition that names each
    /// (attachments of messages not deleted, avatars in the directory): at most `limit`, for the
    /// node to fetch from peers. In a conversation only members see the hashes, so a carrier
    /// lists none of its blobs; a room it carries but did not join is skipped (nobody reads it here).
    public func missingBlobs(limit: Int = 64) throws -> [(partition: PartitionID, hash: Bytes32)] {
        var found: [(partition: PartitionID, hash: Bytes32)] = []
        var seen: Set<Bytes32> = []
        // Only the attachments whose blob is not here, newest message first, read until `limit`
        // blobs are found (a carrier may lack thousands).
        let attachments = try database.cachedStatement(
            """
            SELECT p.id, h.hash FROM attachment_hashes h JOIN partitions p ON p.pid = h.pid
            WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE b.hash = h.hash) AND (p.joined = 1 OR p.kind != ?)
            ORDER BY h.oid DESC
            """)
        try attachments.readRows([.integer(Int64(PartitionKind.room.rawValue))]) { row in
            guard found.count < limit else { return false }
            if let id = PartitionID(bytes: row.blob(0)), let hash = Bytes32(row.blob(1)), seen.insert(hash).inserted {
                found.append((id, hash))
            }
            return found.count < limit
        }
        let avatars = try database.cachedStatement("SELECT avatar FROM profiles WHERE avatar IS NOT NULL")
        for encoded in try avatars.rows(map: { $0.blob(0) }) where found.count < limit {
            for avatar in decodeAttachments(encoded) where found.count < limit && !seen.contains(avatar.hash) {
                seen.insert(avatar.hash)
                if try !hasBlob(avatar.hash) { found.append((PartitionDescriptor.directory.id, avatar.hash)) }
            }
        }
        return found
    }

    /// The blobs `partition`'s views name and this store holds (its messages' attachments; for
    /// the directory, the avatars), for an export to carry: hashes in a stable order.
    public func heldBlobs(namedIn partition: PartitionID) throws -> [Bytes32] {
        var hashes: [Bytes32]
        if partition == PartitionDescriptor.directory.id {
            let avatars = try database.cachedStatement("SELECT avatar FROM profiles WHERE avatar IS NOT NULL").rows { $0.blob(0) }
            hashes = Array(Set(avatars.flatMap { decodeAttachments($0).map(\.hash) })).sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
        } else {
            guard let record = try log.partition(partition) else { return [] }
            hashes = try database.cachedStatement("SELECT DISTINCT hash FROM attachment_hashes WHERE pid = ? ORDER BY hash")
                .rows(.integer(record.pid)) { Bytes32($0.blob(0)) }.compactMap { $0 }
        }
        return try hashes.filter { try hasBlob($0) }
    }

    /// Whether the blob is in this store.
    public func hasBlob(_ hash: Bytes32) throws -> Bool {
        try database.cachedStatement("SELECT 1 FROM blobs WHERE hash = ?").rows(.blob(hash.bytes)) { _ in true }.first ?? false
    }

    /// Whether `partition`'s views name the blob (an attachment of a message there, or for the
    /// directory an avatar): a node serves a peer only blobs of partitions the peer may read.
    public func isBlobNamed(_ hash: Bytes32, in partition: PartitionID) throws -> Bool {
        if partition == PartitionDescriptor.directory.id {
            let avatars = try database.cachedStatement("SELECT avatar FROM profiles WHERE avatar IS NOT NULL").rows { $0.blob(0) }
            return avatars.contains { decodeAttachments($0).contains { $0.hash == hash } }
        }
        guard let record = try log.partition(partition) else { return false }
        return try database.cachedStatement("SELECT 1 FROM attachment_hashes WHERE pid = ? AND hash = ? LIMIT 1")
            .rows(.integer(record.pid), .blob(hash.bytes)) { _ in true }.first ?? false
    }

    /// Up to `length` bytes of a blob from `offset` on, and its total size; nil if it is not here.
    public func blobChunk(_ hash: Bytes32, offset: Int, length: Int) throws -> (total: Int, data: [UInt8])? {
        try database.cachedStatement("SELECT size, substr(data, ?, ?) FROM blobs WHERE hash = ?")
            .rows(.integer(Int64(offset) + 1), .integer(Int64(length)), .blob(hash.bytes)) { (Int($0.int64(0)), $0.blob(1)) }.first
    }
}
