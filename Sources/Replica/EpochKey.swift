import Identity
import Sodium
import Wire

/// One epoch key of a conversation (docs/DESIGN.md §3.5): a random XChaCha20-Poly1305 key that
/// encrypts the conversation's bodies from its epoch on, until a removal or a leave calls for
/// the next epoch.
///
/// Its public `id` ties together the grants of one key (a rotation and later shares of the same
/// key) without revealing it: `id = BLAKE2b-256(key: K, "parley/epoch-key-id/v1" ‖ partition id
/// ‖ epoch u32)`. A recipient recomputes the id after opening a grant, so a grant cannot pass a
/// key off under another key's id, epoch or conversation.
public struct EpochKey: Sendable {
    public let partition: PartitionID
    public let epoch: UInt32
    public let key: SecureBytes
    public let id: Bytes32

    /// A key from its stored or granted bytes; nil unless it is 32 bytes.
    public init?(partition: PartitionID, epoch: UInt32, key: SecureBytes) {
        guard key.count == AEAD.keyBytes else { return nil }
        (self.partition, self.epoch, self.key) = (partition, epoch, key)
        id = EpochKey.id(of: key, partition: partition, epoch: epoch)
    }

    /// A fresh random key for `epoch` of `partition`.
    public static func generate(partition: PartitionID, epoch: UInt32) -> EpochKey {
        EpochKey(partition: partition, epoch: epoch, key: SecureBytes.random(AEAD.keyBytes))!
    }

    static func id(of key: SecureBytes, partition: PartitionID, epoch: UInt32) -> Bytes32 {
        var w = ByteWriter(capacity: 64)
        w.raw(Array("parley/epoch-key-id/v1".utf8))
        w.partitionID(partition)
        w.u32(epoch)
        return Bytes32(GenericHash.hash(w.bytes, key: key.bytes))!
    }
}

/// The body of an encrypted op in a conversation (envelope flag bit0): members open it with the
/// epoch key; carriers store and forward it without reading it.
///
/// | off | len | field |
/// |---|---|---|
/// | 0 | 4 | epoch (u32) |
/// | 4 | 24 | nonce (random; XChaCha's 192 bits make random nonces safe) |
/// | 28 | n + 16 | XChaCha20-Poly1305 ciphertext of the plaintext body, then the tag |
///
/// Additional data: `"parley/body/v1" ‖ partition id ‖ author ‖ op type u8 ‖ epoch u32`, so a
/// ciphertext cannot be replayed in another conversation, under another author or as another
/// type. The envelope's body hash covers these bytes, so carriers still check integrity and
/// authorship. No padding: carriers learn each body's size to within 16 bytes.
public struct EncryptedBody: Hashable, Sendable {
    /// Bytes an encrypted body adds to its plaintext.
    public static let overheadBytes = 4 + AEAD.nonceBytes + AEAD.tagBytes

    public let epoch: UInt32
    /// The whole body as stored in the envelope.
    public let bytes: [UInt8]

    /// Parses the layout (not the ciphertext); refuses bodies too short to hold a tag.
    public init(decoding bytes: [UInt8]) throws(WireDecodingError) {
        guard bytes.count >= Self.overheadBytes else { throw .truncated(field: "encrypted body") }
        var r = ByteReader(bytes)
        epoch = try r.u32("epoch")
        self.bytes = bytes
    }

    /// Encrypts `plaintext` (an `OperationBody` encoding) for an op of `type` by `author`.
    public static func seal(_ plaintext: [UInt8], with key: EpochKey, type: OperationType, author: UserID) throws(SodiumError) -> [UInt8] {
        let sealed = try AEAD.seal(plaintext, additionalData: additionalData(key.partition, author, type.rawValue, key.epoch), key: key.key)
        var w = ByteWriter(capacity: 4 + sealed.count)
        w.u32(key.epoch)
        w.raw(sealed)
        return w.bytes
    }

    /// The plaintext, or nil when `key` is not the one it was sealed with (or anything changed).
    public func open(with key: EpochKey, type: UInt8, author: UserID) -> [UInt8]? {
        guard key.epoch == epoch else { return nil }
        return try? AEAD.open(Array(bytes[4...]), additionalData: Self.additionalData(key.partition, author, type, epoch), key: key.key)
    }

    static func additionalData(_ partition: PartitionID, _ author: UserID, _ type: UInt8, _ epoch: UInt32) -> [UInt8] {
        var w = ByteWriter(capacity: 96)
        w.raw(Array("parley/body/v1".utf8))
        w.partitionID(partition)
        w.user(author)
        w.u8(type)
        w.u32(epoch)
        return w.bytes
    }
}

/// An attachment's content as kept (and later transferred) for a conversation: encrypted with
/// the epoch key of the message that names it, so carriers can hold and serve the blob without
/// reading it. The attachment's hash is the hash of these bytes, so anyone can check a fetched
/// blob, and only members can open it.
///
/// | off | len | field |
/// |---|---|---|
/// | 0 | 4 | epoch (u32) |
/// | 4 | 24 | nonce |
/// | 28 | n + 16 | XChaCha20-Poly1305 ciphertext of the file, then the tag |
///
/// Additional data: `"parley/blob/v1" ‖ partition id ‖ epoch u32`.
public enum EncryptedBlob {
    /// Encrypts a file's content under `key`.
    public static func seal(_ content: [UInt8], with key: EpochKey) throws(SodiumError) -> [UInt8] {
        let sealed = try AEAD.seal(content, additionalData: additionalData(key.partition, key.epoch), key: key.key)
        var w = ByteWriter(capacity: 4 + sealed.count)
        w.u32(key.epoch)
        w.raw(sealed)
        return w.bytes
    }

    /// The epoch a stored blob was sealed under, or nil if it is too short to be one.
    public static func epoch(of blob: [UInt8]) -> UInt32? {
        guard blob.count >= EncryptedBody.overheadBytes else { return nil }
        var r = ByteReader(blob)
        return try? r.u32("epoch")
    }

    /// The file's content, or nil when `key` does not open it.
    public static func open(_ blob: [UInt8], with key: EpochKey) -> [UInt8]? {
        guard epoch(of: blob) == key.epoch else { return nil }
        return try? AEAD.open(Array(blob[4...]), additionalData: additionalData(key.partition, key.epoch), key: key.key)
    }

    static func additionalData(_ partition: PartitionID, _ epoch: UInt32) -> [UInt8] {
        var w = ByteWriter(capacity: 64)
        w.raw(Array("parley/blob/v1".utf8))
        w.partitionID(partition)
        w.u32(epoch)
        return w.bytes
    }
}
