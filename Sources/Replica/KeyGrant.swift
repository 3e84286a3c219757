import Identity
import Sodium
import Wire

/// A key grant (op type `keyGrant`, plaintext, in a conversation): one epoch key sealed to each
/// listed member with `crypto_box_seal` to their X25519 key, converted from their user id
/// (docs/DESIGN.md §3.5). The sealed box is anonymous; the author's signature on the op says who granted.
///
/// | off | len | field |
/// |---|---|---|
/// | 0 | 4 | epoch (u32) |
/// | 4 | 32 | key id (`EpochKey.id`) |
/// | 36 | 2 | n: members, 1...256 |
/// | 38 | 148 × n | member user id (32) ‖ sealed box (116) |
///
/// Each sealed box holds `key (32) ‖ partition id (32) ‖ epoch u32` (68 bytes + 48 of
/// `crypto_box_seal`), so a box copied into another conversation or epoch fails to open as a
/// key there. Carriers see who was granted which epoch — the membership they already see.
public struct KeyGrant: Hashable, Sendable {
    /// The sealed key for one member.
    public struct Box: Hashable, Sendable {
        public var member: UserID
        public var sealed: [UInt8]
        public init(member: UserID, sealed: [UInt8]) { (self.member, self.sealed) = (member, sealed) }
    }

    /// `key ‖ partition ‖ epoch` sealed: 68 + 48 bytes.
    public static let sealedBytes = 68 + 48
    static let entryBytes = 32 + sealedBytes

    public var epoch: UInt32
    public var keyID: Bytes32
    public var boxes: [Box]

    public init(epoch: UInt32, keyID: Bytes32, boxes: [Box]) {
        (self.epoch, self.keyID, self.boxes) = (epoch, keyID, boxes)
    }

    /// Seals `key` to each of `members` (duplicates dropped, in id order). Throws
    /// `SodiumError.invalidPublicKey` for a user id that is not a valid Ed25519 point.
    public init(granting key: EpochKey, to members: [UserID]) throws(SodiumError) {
        var message = key.key.bytes
        var w = ByteWriter(capacity: 36)
        w.partitionID(key.partition)
        w.u32(key.epoch)
        message += w.bytes
        defer { for i in message.indices { message[i] = 0 } }
        var boxes: [Box] = []
        for member in Set(members).sorted() {
            let curve = try Signing.curve25519PublicKey(fromEd25519: member.publicKey)
            boxes.append(Box(member: member, sealed: try SealedBox.seal(message, to: curve)))
        }
        self.init(epoch: key.epoch, keyID: key.id, boxes: boxes)
    }

    /// Who this grant gives the key to.
    public var recipients: [UserID] { boxes.map(\.member) }

    /// Opens the box addressed to `member` with their X25519 key pair; nil when there is none,
    /// it does not open, or what it holds is not this grant's key for `partition` (wrong
    /// partition, epoch or key id).
    public func open(for member: UserID, keyPair: KeyExchange.KeyPair, partition: PartitionID) -> EpochKey? {
        guard let box = boxes.first(where: { $0.member == member }),
            var plain = try? SealedBox.open(box.sealed, with: keyPair), plain.count == 68
        else { return nil }
        defer { for i in plain.indices { plain[i] = 0 } }
        var r = ByteReader(plain)
        guard let keyBytes = try? r.raw(32, "key"), let boxPartition = try? r.partitionID("partition"), let boxEpoch = try? r.u32("epoch"),
            boxPartition == partition, boxEpoch == epoch,
            let key = EpochKey(partition: partition, epoch: epoch, key: SecureBytes(keyBytes)), key.id == keyID
        else { return nil }
        return key
    }

    /// Why the grant is malformed, or nil.
    func validate() -> String? {
        if boxes.isEmpty { return "a key grant names no member" }
        if boxes.count > BodyLimits.members { return "a key grant names more than \(BodyLimits.members) members" }
        if Set(boxes.map(\.member)).count != boxes.count { return "a key grant names a member twice" }
        if boxes.contains(where: { $0.sealed.count != Self.sealedBytes }) { return "a sealed key is not \(Self.sealedBytes) bytes" }
        return nil
    }

    func encode(to w: inout ByteWriter) {
        w.u32(epoch)
        w.bytes32(keyID)
        w.u16(UInt16(boxes.count))
        for box in boxes {
            w.user(box.member)
            w.raw(box.sealed)
        }
    }

    init(reading r: inout ByteReader) throws(WireDecodingError) {
        epoch = try r.u32("epoch")
        keyID = try r.bytes32("key id")
        let count = Int(try r.u16("member count"))
        guard count <= BodyLimits.members else { throw .tooLong(field: "grant members", length: count, limit: BodyLimits.members) }
        guard r.remaining >= count * Self.entryBytes else { throw .truncated(field: "grant members") }
        var boxes: [Box] = []
        boxes.reserveCapacity(count)
        for _ in 0..<count {
            boxes.append(Box(member: try r.user("member"), sealed: try r.raw(Self.sealedBytes, "sealed key")))
        }
        self.boxes = boxes
    }
}

/// An invite (op type `invite`, in the invitee's inbox): the conversation's descriptor (creator
/// and nonce), sealed to the inbox's owner with `crypto_box_seal`. It tells a node it was added
/// even when the one who added it is never seen again; only the owner can open it.
///
/// | part | bytes | content |
/// |---|---|---|
/// | body | 48 + 65 | `crypto_box_seal(descriptor)` to the owner's X25519 key |
/// | descriptor | 65 | kind 2 (conversation) ‖ creator (32) ‖ nonce (32) |
public enum Invite {
    /// The largest sealed invite accepted (room for later fields).
    public static let maxBodyBytes = 1024

    /// Seals an invite to `descriptor` (a conversation) for `owner`.
    public static func seal(_ descriptor: PartitionDescriptor, to owner: UserID) throws(SodiumError) -> [UInt8] {
        let curve = try Signing.curve25519PublicKey(fromEd25519: owner.publicKey)
        return try SealedBox.seal(OperationBody.invite(conversation: descriptor).encoded, to: curve)
    }

    /// The conversation an invite names, or nil when it is not for `keyPair` or not an invite.
    public static func open(_ body: [UInt8], with keyPair: KeyExchange.KeyPair) -> PartitionDescriptor? {
        guard let plain = try? SealedBox.open(body, with: keyPair),
            case .invite(let descriptor) = try? OperationBody(type: OperationType.invite.rawValue, decoding: plain)
        else { return nil }
        return descriptor
    }
}
