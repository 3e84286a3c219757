import Identity
import Replica
import SQLite
import Wire

/// Attaching a file: a blob stored with the key its author writes with.
extension ReplicaStore {
    /// Stores a file to attach to a message `identity` will post in `partition`, and returns the
    /// attachment to put in the post. In a conversation the content is encrypted with the key
    /// `identity` writes with (rotating first if the key plan says so); `size` stays the file's
    /// own size. Throws `.invalidInput` for a file over 8 MiB, `.notMember` outside a
    /// conversation `identity` belongs to.
    public func attach(
        _ content: [UInt8], name: String, mime: String, in partition: PartitionID, by identity: Identity, nowMillis: UInt64
    ) throws
        -> Attachment
    {
        guard content.count <= Blobs.maxBlobBytes else {
            throw StoreError.invalidInput("the file is \(content.count) bytes, over the limit of \(Blobs.maxBlobBytes) (8 MiB)")
        }
        try useIdentity(identity)
        return try database.transaction(.immediate) {
            guard let record = try log.partition(partition) else { throw StoreError.unknownPartition(partition) }
            var stored = content
            if record.descriptor.kind == .conversation, let local = keys.localIdentity(identity.id) {
                stored = try EncryptedBlob.seal(content, with: try prepareWriteKey(record, by: local, nowMillis: nowMillis))
            } else if record.descriptor.kind == .privateRoom {
                stored = try EncryptedBlob.seal(content, with: try privateRoomWriteKeys(record).epochKey)
            }
            let hash = try blobs.storeBlob(stored, nowMillis: nowMillis)
            try views.flushPendingRebuilds()
            let attachment = Attachment(name: name, size: UInt64(content.count), mime: mime, hash: hash)
            if let problem = attachment.problem { throw StoreError.invalidInput(problem) }
            return attachment
        }
    }
}
