import Identity
import Sodium
import Wire

/// The kinds of partition (docs/DESIGN.md §3.2). A partition is the unit of replication, permission and
/// encryption; its kind fixes who may write what.
public enum PartitionKind: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case room = 1
    case conversation = 2
    case directory = 3
    case inbox = 4
    case ownData = 5
    case privateRoom = 6

    /// The name used in JSON and on the command line.
    public var description: String {
        switch self {
        case .room: "room"
        case .conversation: "conversation"
        case .directory: "directory"
        case .inbox: "inbox"
        case .ownData: "self"
        case .privateRoom: "private-room"
        }
    }
}

/// What a partition is; its id is derived from it, so a peer cannot lie about a partition's kind
/// or owner: anyone can recompute the id from the descriptor.
///
/// | kind | id |
/// |---|---|
/// | room | BLAKE2b("parley/room/v1" ‖ normalized name) |
/// | conversation | BLAKE2b("parley/conversation/v1" ‖ creator key ‖ 32-byte nonce) |
/// | directory | BLAKE2b("parley/directory/v1") |
/// | inbox | BLAKE2b("parley/inbox/v1" ‖ owner key) |
/// | self | BLAKE2b("parley/self/v1" ‖ owner key) |
/// | private room | BLAKE2b("parley/private-room/v1" ‖ room public key) |
public enum PartitionDescriptor: Hashable, Sendable {
    case room(RoomName)
    case conversation(creator: UserID, nonce: Bytes32)
    case directory
    case inbox(owner: UserID)
    case ownData(owner: UserID)
    /// A room protected by a passphrase: its Ed25519 room key is derived from the name and the
    /// passphrase (`PrivateRoomKeys`), so neither the name nor the passphrase can be read from
    /// it, and every op in it must carry the room key's signature (`RoomSignature`).
    case privateRoom(roomKey: Bytes32)

    public var kind: PartitionKind {
        switch self {
        case .room: .room
        case .conversation: .conversation
        case .directory: .directory
        case .inbox: .inbox
        case .ownData: .ownData
        case .privateRoom: .privateRoom
        }
    }

    public var id: PartitionID {
        let hash: [UInt8]
        switch self {
        case .room(let name): hash = GenericHash.hash(domain: "parley/room/v1", [Array(name.value.utf8)])
        case .conversation(let creator, let nonce): hash = GenericHash.hash(domain: "parley/conversation/v1", [creator.publicKey, nonce.bytes])
        case .directory: hash = GenericHash.hash(domain: "parley/directory/v1", [])
        case .inbox(let owner): hash = GenericHash.hash(domain: "parley/inbox/v1", [owner.publicKey])
        case .ownData(let owner): hash = GenericHash.hash(domain: "parley/self/v1", [owner.publicKey])
        case .privateRoom(let roomKey): hash = GenericHash.hash(domain: "parley/private-room/v1", [roomKey.bytes])
        }
        return PartitionID(bytes: hash)!
    }

    /// A name for people: `#lobby`, `directory`, the conversation's id...
    public var displayName: String {
        switch self {
        case .room(let name): "#\(name.value)"
        case .conversation: id.text
        case .directory: "directory"
        case .inbox(let owner): "inbox of \(owner.short)"
        case .ownData(let owner): "self of \(owner.short)"
        case .privateRoom: "private room \(id.text.prefix(12))"
        }
    }

    /// `kind u8 ‖ fields`: stored with the partition and sent to peers, who recompute the id.
    public var encoded: [UInt8] {
        var w = ByteWriter()
        w.u8(kind.rawValue)
        switch self {
        case .room(let name): w.string16(name.value)
        case .conversation(let creator, let nonce): w.user(creator); w.bytes32(nonce)
        case .directory: break
        case .inbox(let owner), .ownData(let owner): w.user(owner)
        case .privateRoom(let roomKey): w.bytes32(roomKey)
        }
        return w.bytes
    }

    public init(decoding bytes: [UInt8]) throws(WireDecodingError) {
        var r = ByteReader(bytes)
        guard let kind = PartitionKind(rawValue: try r.u8("partition kind")) else { throw .invalidValue(field: "partition kind") }
        switch kind {
        case .room:
            guard let name = RoomName(try r.string16("room name", limit: RoomName.maxBytes)), name.value.utf8.count > 0 else {
                throw .invalidValue(field: "room name")
            }
            self = .room(name)
        case .conversation: self = .conversation(creator: try r.user("creator"), nonce: try r.bytes32("nonce"))
        case .directory: self = .directory
        case .inbox: self = .inbox(owner: try r.user("owner"))
        case .ownData: self = .ownData(owner: try r.user("owner"))
        case .privateRoom: self = .privateRoom(roomKey: try r.bytes32("room key"))
        }
        try r.expectEnd()
    }
}

/// A room's name, normalized: trimmed, without a leading `#`, case-folded, so `#Lobby` and
/// `lobby` are one room. 1–64 UTF-8 bytes; no spaces, control characters, `#` or `/` inside.
public struct RoomName: Hashable, Sendable, CustomStringConvertible {
    public static let maxBytes = 64
    public let value: String

    /// Nil when the text is not a valid room name (see `problem(with:)` for why).
    public init?(_ text: String) {
        if RoomName.isNormalASCII(text) {
            value = text
            return
        }
        guard RoomName.problem(with: text) == nil else { return nil }
        value = RoomName.normalize(text)
    }

    /// Whether `text` is already a normalized room name in printable ASCII without capitals
    /// (`lobby`, `team-1`): the usual case, decided without Unicode property lookups, which
    /// cost each `author` request about 8,000 instructions.
    static func isNormalASCII(_ text: String) -> Bool {
        let bytes = text.utf8
        return !bytes.isEmpty && bytes.count <= maxBytes
            && bytes.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "#"), UInt8(ascii: "/"), UInt8(ascii: "A")...UInt8(ascii: "Z"): false
                case 0x21...0x7E: true
                default: false
                }
            }
    }

    static func normalize(_ text: String) -> String {
        var trimmed = Substring(trimWhitespace(text))
        if trimmed.hasPrefix("#") { trimmed = trimmed.dropFirst() }
        return trimmed.lowercased()
    }

    /// Why `text` is not a room name, in words for an error message; nil if it is one.
    public static func problem(with text: String) -> String? {
        let name = normalize(text)
        if name.isEmpty { return "a room name cannot be empty" }
        if name.utf8.count > maxBytes { return "a room name is at most \(maxBytes) bytes" }
        for scalar in name.unicodeScalars {
            if scalar.properties.isWhitespace || scalar.properties.generalCategory == .control || scalar == "#" || scalar == "/" {
                return "a room name cannot contain spaces, control characters, '#' or '/'"
            }
        }
        return nil
    }

    public var description: String { "#\(value)" }
}

/// Trims leading and trailing whitespace without importing Foundation into the pure model.
func trimWhitespace(_ text: String) -> String {
    let scalars = text.unicodeScalars
    guard let start = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
        let end = scalars.lastIndex(where: { !$0.properties.isWhitespace })
    else { return "" }
    return String(scalars[start...end])
}
