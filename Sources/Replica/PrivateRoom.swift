import Identity
import Sodium
import Wire

/// The keys of a private room (docs/DESIGN.md §3.7), all derived from its normalized name and
/// its passphrase, so that whoever knows both holds the room and nobody else can name it:
///
/// - `seed = Argon2id(passphrase, salt = BLAKE2b-128("parley/private-room/salt/v1" ‖ name))`,
///   64 bytes, with `cost` (libsodium's interactive limits: 2 passes over 64 MiB);
/// - the **room key**, an Ed25519 key pair from the seed's first 32 bytes: its public half is the
///   partition's descriptor (`.privateRoom(roomKey:)`), and every op in the room carries its
///   signature (`RoomSignature`), which carriers check, so a node without the passphrase can
///   carry the room but not write into it;
/// - the **content key**, the seed's last 32 bytes: the XChaCha20-Poly1305 key of every body
///   (`EncryptedBody`, epoch 0) and attachment (`EncryptedBlob`) in the room.
///
/// The same name with another passphrase gives another room. The name is the salt, so one
/// guess of a passphrase tests one name: no table of guesses serves all rooms.
public struct PrivateRoomKeys: Sendable {
    /// The Argon2id cost of one derivation, and so of one guess. Fixed by the protocol: every
    /// holder must derive the same keys.
    public static let cost = PasswordHash.Cost.interactive
    /// The shortest passphrase accepted, in bytes: a shorter one falls to offline guessing.
    public static let minPassphraseBytes = 8
    /// The longest passphrase accepted, in bytes.
    public static let maxPassphraseBytes = 1024

    public let name: RoomName
    public let roomKey: Signing.KeyPair
    public let contentKey: SecureBytes

    /// Derives the room's keys (about a third of a second and 64 MiB with `cost`). Throws
    /// `invalidPassphrase` for a passphrase outside the length limits.
    public static func derive(name: RoomName, passphrase: [UInt8], cost: PasswordHash.Cost = Self.cost) throws -> PrivateRoomKeys {
        if let problem = Self.problem(withPassphrase: passphrase) { throw PrivateRoomError.invalidPassphrase(problem) }
        let seed = try PasswordHash.deriveKey(passphrase: passphrase, salt: salt(for: name), cost: cost, bytes: 64)
        let bytes = seed.bytes
        return PrivateRoomKeys(name: name, seed: Array(bytes[0..<32]), contentKey: Array(bytes[32..<64]))
    }

    /// The keys from their stored parts (the room key's seed and the content key).
    public init(name: RoomName, seed: [UInt8], contentKey: [UInt8]) {
        self.name = name
        roomKey = try! Signing.KeyPair(seed: seed)
        self.contentKey = SecureBytes(contentKey)
    }

    /// The salt of the passphrase hash: BLAKE2b-128 over the domain and the normalized name.
    public static func salt(for name: RoomName) -> [UInt8] {
        GenericHash.hash(domain: "parley/private-room/salt/v1", [Array(name.value.utf8)], outputBytes: PasswordHash.saltBytes)
    }

    /// Why `passphrase` cannot protect a room, in words; nil if it can.
    public static func problem(withPassphrase passphrase: [UInt8]) -> String? {
        if passphrase.count < minPassphraseBytes { return "a room passphrase must be at least \(minPassphraseBytes) bytes" }
        if passphrase.count > maxPassphraseBytes { return "a room passphrase is at most \(maxPassphraseBytes) bytes" }
        return nil
    }

    public var descriptor: PartitionDescriptor { .privateRoom(roomKey: Bytes32(roomKey.publicKey)!) }

    /// The content key as the epoch key (epoch 0) of the room's partition.
    public var epochKey: EpochKey { EpochKey(partition: descriptor.id, epoch: 0, key: contentKey)! }
}

/// Why a private room cannot be joined or written.
public enum PrivateRoomError: Error, Equatable, CustomStringConvertible {
    case invalidPassphrase(String)

    public var description: String {
        switch self {
        case .invalidPassphrase(let why): why
        }
    }
}

/// The write capability of a private room: every op's body starts with a 64-byte Ed25519
/// signature by the room key, followed by the op's `EncryptedBody`.
///
/// The signature covers `"parley/private-room/op/v1" ‖ partition id ‖ author ‖ seq u64 ‖ prev ‖
/// hlc u64 ‖ op type u8 ‖ flags u16 ‖ BLAKE2b-256(encrypted body)`: the op's place and content
/// without its body hash (which covers the signature itself). Anyone holding the descriptor
/// checks it, so a carrier without the passphrase refuses ops of anyone else without it, and
/// cannot move a holder's signed body to another place, author or type.
public enum RoomSignature {
    public static let bytes = Signing.signatureBytes

    /// The signed message of an op at this place with this sealed body.
    public static func message(
        partition: PartitionID, author: UserID, seq: UInt64, prev: OpID, hlc: HLC, type: UInt8, flags: UInt16, sealed: ArraySlice<UInt8>
    ) -> [UInt8] {
        var w = ByteWriter(capacity: 200)
        w.raw(Array("parley/private-room/op/v1".utf8))
        w.partitionID(partition)
        w.user(author)
        w.u64(seq)
        w.bytes32(prev.raw)
        w.u64(hlc.raw)
        w.u8(type)
        w.u16(flags)
        w.raw(GenericHash.hash(Array(sealed)))
        return w.bytes
    }

    /// The body of an op: the room key's signature, then `sealed`.
    public static func body(
        sealed: [UInt8], keys: PrivateRoomKeys, author: UserID, seq: UInt64, prev: OpID, hlc: HLC, type: OperationType, flags: Operation.Flags
    ) -> [UInt8] {
        let signed = message(
            partition: keys.descriptor.id, author: author, seq: seq, prev: prev, hlc: hlc, type: type.rawValue, flags: flags.rawValue,
            sealed: sealed[...])
        return keys.roomKey.sign(signed) + sealed
    }

    /// The encrypted body of `op` if its room signature by `roomKey` is valid; nil otherwise.
    public static func check(_ op: Operation, roomKey: Bytes32) -> EncryptedBody? {
        guard op.body.count >= bytes + EncryptedBody.overheadBytes else { return nil }
        let sealed = op.body[bytes...]
        let signed = message(
            partition: op.partition, author: op.author, seq: op.seq, prev: op.prev, hlc: op.hlc, type: op.type, flags: op.flags.rawValue,
            sealed: sealed)
        guard Signing.isValidSignature(Array(op.body[0..<bytes]), for: signed, publicKey: roomKey.bytes) else { return nil }
        return try? EncryptedBody(decoding: Array(sealed))
    }
}
