import Identity
import Sodium
import Wire

/// Why an op breaks its partition's rules (docs/DESIGN.md §3.2). Every replica checks these when it
/// applies an op, so a misbehaving node cannot write where it may not.
public enum RuleViolation: Error, Hashable, Sendable, CustomStringConvertible {
    /// This kind of op does not belong in this kind of partition.
    case typeNotAllowed(OperationType, PartitionKind)
    /// A directory entry written for someone other than its author or a device it is known to
    /// be of (the device's certificate may arrive later, so it may resolve).
    case notOwnProfile
    /// A write into someone else's private (`self`) partition (as for a profile, the author's
    /// certificate as the owner's device may arrive later).
    case notOwner
    /// A device certificate or revocation by an author that is not (yet) known to be the person
    /// or one of their devices.
    case unknownDevice
    /// The author is a revoked device and the op is past its revocation's cutoff (refused for now:
    /// the revocation stops counting if its own author turns out revoked before it).
    case deviceRevoked
    /// A write into a conversation by someone who is not a member (yet: it is accepted once the
    /// op that adds them arrives, because membership only grows).
    case notMember
    /// Only the conversation's creator may do this (create it, remove members).
    case creatorOnly
    /// The creator's first op in a conversation must create it.
    case createMustComeFirst
    /// Editing or deleting a message that is not the author's own earlier post.
    case notAuthorOfTarget
    /// The body does not decode, or breaks a field limit.
    case invalidBody(String)
    /// In a conversation or an inbox this op's body must be encrypted (envelope flag bit0).
    case mustBeEncrypted
    /// Membership ops and key grants stay readable to carriers; this one was flagged encrypted.
    case mustBePlaintext
    /// A conversation's create named it in plaintext; the name belongs in an encrypted rename.
    case nameInPlaintext
    /// This node carries the partition for others and holds its quota of bytes already. Not a
    /// fault of the op: a member (or a carrier with room) accepts it, so it may resolve later.
    case quotaExceeded
    /// The op is stamped more than `HybridClock.maxLeadMillis` ahead of this replica's clock:
    /// held (refused for now) until the replica's clock is that close to it, so that no stamp
    /// can put a message below every later one, hide unread messages or pull a clock forward.
    case stampedAhead
    /// An op in a private room without a valid signature by the room's key (`RoomSignature`):
    /// its author does not hold the room's passphrase.
    case roomSignature
    /// The op arrived without its body as if outside its room's retention, but by this
    /// replica's view it is inside: refused for now (it may fall outside later, or the whole op
    /// may come from another peer), so a peer cannot drop a body by pretending.
    case insideRetention

    public var description: String {
        switch self {
        case .typeNotAllowed(let type, let kind): "op type \(type) is not allowed in a \(kind) partition"
        case .notOwnProfile: "a profile entry may only be written by its own user or one of their devices"
        case .notOwner: "only the owner or one of their devices may write to a self partition"
        case .unknownDevice: "the author is not known to be the person or one of their devices"
        case .deviceRevoked: "the author is a revoked device and this op is past its revocation's cutoff"
        case .notMember: "the author is not a member of the conversation"
        case .creatorOnly: "only the conversation's creator may do that"
        case .createMustComeFirst: "the creator's first op must create the conversation"
        case .notAuthorOfTarget: "only the author of a message may edit or delete it"
        case .invalidBody(let why): "invalid body: \(why)"
        case .mustBeEncrypted: "this op's body must be encrypted here"
        case .mustBePlaintext: "membership ops and key grants must stay readable (not encrypted)"
        case .nameInPlaintext: "a conversation's name must not be sent in plaintext"
        case .quotaExceeded: "this node's quota for partitions it carries for others is full"
        case .roomSignature: "no valid signature by the private room's key: only holders of the room's passphrase write there"
        case .stampedAhead: "stamped more than \(HybridClock.maxLeadMillis / 60_000) minutes ahead of this node's clock; held until then"
        case .insideRetention: "arrived without its body, but is inside the room's retention here; held until it falls outside"
        }
    }

    /// Whether the same op may be accepted later, once other ops have arrived (or, for the
    /// quota, once this node becomes a member or is given more room; for a stamp ahead, once
    /// the clock is near it).
    public var mayResolveLater: Bool {
        switch self {
        case .notMember, .quotaExceeded, .stampedAhead, .insideRetention, .notOwnProfile, .notOwner, .unknownDevice, .deviceRevoked: true
        default: false
        }
    }
}

/// An op's body as far as the rules can read it.
public enum CheckedBody: Hashable, Sendable {
    /// A plaintext body, decoded and within its limits.
    case plain(OperationBody)
    /// A conversation body encrypted with an epoch key: members open it at view time; every
    /// replica, member or carrier, accepts it on the envelope and plaintext rules alone.
    case encrypted(EncryptedBody)
    /// An invite sealed to an inbox's owner: only the owner opens it.
    case sealed
    /// A room's post or edit whose body its author's delete erased (`Operation.erasure`, checked
    /// by the store): only the header is left, and the proof.
    case erased(Erasure)
    /// A room's post, edit or reaction whose body was dropped outside the room's retention:
    /// only the header is left (`Operation.isExpired`); it has no effect on the views.
    case expired
}

/// The rules that depend only on the op itself and its partition's descriptor.
///
/// Everything here is decidable by every replica, including carriers that cannot read
/// encrypted bodies, so acceptance — and therefore the op set and its digest — never depends on
/// who holds which key. Rules that need a decrypted body (an edit or delete of the author's own
/// post, inside an encrypted body) are applied by members when they build their views.
public enum PartitionRules {
    /// Which op types each kind of partition accepts.
    public static func allows(_ type: OperationType, in kind: PartitionKind) -> Bool {
        switch (kind, type) {
        case (.room, .post), (.room, .edit), (.room, .delete), (.room, .react), (.room, .roomPolicy),
            (.room, .taskCreate), (.room, .taskUpdate), (.room, .taskDelete):
            return true
        case (.conversation, .post), (.conversation, .edit), (.conversation, .delete), (.conversation, .react),
            (.conversation, .taskCreate), (.conversation, .taskUpdate), (.conversation, .taskDelete),
            (.conversation, .conversationCreate), (.conversation, .memberAdd), (.conversation, .memberRemove),
            (.conversation, .memberLeave), (.conversation, .conversationRename), (.conversation, .readMarker):
            return true
        case (.conversation, .keyGrant):
            return true
        case (.privateRoom, .post), (.privateRoom, .edit), (.privateRoom, .delete), (.privateRoom, .react),
            (.privateRoom, .taskCreate), (.privateRoom, .taskUpdate), (.privateRoom, .taskDelete), (.privateRoom, .roomLink),
            (.privateRoom, .roomNotice):
            return true
        case (.directory, .profile), (.directory, .deviceCertificate), (.directory, .deviceRevocation):
            return true
        case (.ownData, .readMarker), (.ownData, .chatMute):
            return true
        case (.inbox, .invite):
            return true
        default:
            return false
        }
    }

    /// Checks everything that needs no other op: type allowed, encryption flag as the partition
    /// requires, body layout and limits, owner and creator rules. Returns what can be read of
    /// the body.
    public static func check(_ op: Operation, in descriptor: PartitionDescriptor) -> Result<CheckedBody, RuleViolation> {
        guard let type = OperationType(rawValue: op.type) else { return .failure(.invalidBody("unknown op type \(op.type)")) }
        guard allows(type, in: descriptor.kind) else { return .failure(.typeNotAllowed(type, descriptor.kind)) }
        let encrypted = op.flags.contains(.bodyEncrypted)
        switch descriptor {
        case .conversation(let creator, _):
            if op.author == creator && op.seq == 1 && type != .conversationCreate { return .failure(.createMustComeFirst) }
            if type.isConversationContent {
                guard encrypted else { return .failure(.mustBeEncrypted) }
                guard let sealed = try? EncryptedBody(decoding: op.body) else { return .failure(.invalidBody("too short for an encrypted body")) }
                return .success(.encrypted(sealed))
            }
            if encrypted { return .failure(.mustBePlaintext) }
        case .inbox:
            guard encrypted else { return .failure(.mustBeEncrypted) }
            guard op.body.count > SealedBox.overheadBytes, op.body.count <= Invite.maxBodyBytes else {
                return .failure(.invalidBody("a sealed invite must be \(SealedBox.overheadBytes + 1)...\(Invite.maxBodyBytes) bytes"))
            }
            return .success(.sealed)
        case .privateRoom(let roomKey):
            // Everything in a private room is content: encrypted, and signed by the room key,
            // which every replica checks from the descriptor alone.
            guard encrypted else { return .failure(.mustBeEncrypted) }
            guard let sealed = RoomSignature.check(op, roomKey: roomKey) else { return .failure(.roomSignature) }
            return .success(.encrypted(sealed))
        default:
            break
        }
        let body: OperationBody
        do {
            body = try OperationBody(type: op.type, decoding: op.body)
        } catch {
            return .failure(.invalidBody(error.description))
        }
        // Whether the author writes for another key (a profile's subject, a `self` partition's
        // owner) as one of its devices is decided by the store, which knows the certificates.
        switch (descriptor, body) {
        case (.directory, .deviceCertificate(let certificate)):
            if let problem = certificate.problem { return .failure(.invalidBody(problem)) }
            guard op.author == certificate.certifier || (op.author == certificate.device && certificate.certifier == certificate.person) else {
                return .failure(.invalidBody("a device certificate is written by its certifier, or by the device when the person's own key certifies it"))
            }
        case (.conversation(let creator, _), .conversationCreate(let name, _)):
            if op.author != creator { return .failure(.creatorOnly) }
            if op.seq != 1 { return .failure(.createMustComeFirst) }
            if !name.isEmpty { return .failure(.nameInPlaintext) }
        default:
            break
        }
        return .success(.plain(body))
    }
}

/// The sort key of a multi-writer register (tasks, conversation name): `(hlc, author, seq)` as 48
/// big-endian bytes, so comparing the bytes — in Swift or as a SQLite BLOB — compares the clocks.
public struct ClockKey: Hashable, Comparable, Sendable {
    public let bytes: [UInt8]

    public init(hlc: HLC, author: UserID, seq: UInt64) {
        var w = ByteWriter(capacity: 48)
        w.u64(hlc.raw)
        w.bytes32(author.raw)
        w.u64(seq)
        bytes = w.bytes
    }

    public init(_ op: Operation) { self.init(hlc: op.hlc, author: op.author, seq: op.seq) }

    /// A key from its 48 stored bytes.
    public init(bytes: [UInt8]) { self.bytes = bytes }

    public static func < (a: ClockKey, b: ClockKey) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }
}
