import Identity
import Wire

/// The op types (byte 1 of the envelope).
public enum OperationType: UInt8, Sendable, CaseIterable {
    case post = 0x10
    case edit = 0x11
    case delete = 0x12
    case react = 0x13
    /// A room's policy: topic, retention, history for new joiners (`RoomPolicy`).
    case roomPolicy = 0x14
    case roomLink = 0x15
    case roomNotice = 0x16
    case profile = 0x20
    /// A device of a person, certified (`DeviceCertificate`, docs/DESIGN.md §3.8).
    case deviceCertificate = 0x21
    /// A lost device: its later writes are refused (`DeviceRevocation`).
    case deviceRevocation = 0x22
    case conversationCreate = 0x30
    case memberAdd = 0x31
    case memberRemove = 0x32
    case memberLeave = 0x33
    case conversationRename = 0x34
    case keyGrant = 0x35
    case taskCreate = 0x40
    case taskUpdate = 0x41
    case taskDelete = 0x42
    case readMarker = 0x50
    /// A chat muted or unmuted by its reader: kept in the reader's own partition, so every
    /// device of theirs follows it; the newest by HLC wins.
    case chatMute = 0x51
    case invite = 0x60

    /// Whether, in a conversation, this type's body is encrypted with the epoch key (docs/DESIGN.md
    /// §3.5). The others there — create, add, remove, leave, key grants — stay readable to
    /// carriers: they hold only public keys and sealed boxes.
    public var isConversationContent: Bool {
        switch self {
        case .post, .edit, .delete, .react, .conversationRename, .taskCreate, .taskUpdate, .taskDelete, .readMarker: true
        default: false
        }
    }
}

/// Limits on body fields, checked when encoding locally and when decoding from peers.
public enum BodyLimits {
    public static let textBytes = 32 * 1024
    public static let nameBytes = 128
    public static let emojiBytes = 32
    public static let statusBytes = 256
    public static let attachments = 16
    public static let members = 256
}

/// A file attached to a message, referenced by the hash of its content (the blob travels separately).
public struct Attachment: Hashable, Sendable {
    public var name: String
    public var size: UInt64
    public var mime: String
    public var hash: Bytes32
    public init(name: String, size: UInt64, mime: String, hash: Bytes32) {
        (self.name, self.size, self.mime, self.hash) = (name, size, mime, hash)
    }
}

extension Attachment {
    /// Why the attachment's fields break a limit, or nil.
    public var problem: String? {
        if name.utf8.count > BodyLimits.nameBytes * 2 { return "attachment name is over \(BodyLimits.nameBytes * 2) bytes" }
        if mime.utf8.count > BodyLimits.nameBytes { return "attachment type is over \(BodyLimits.nameBytes) bytes" }
        return nil
    }
}

/// A point on Earth, in degrees.
public struct Location: Hashable, Sendable {
    public var latitude: Double
    public var longitude: Double
    public init(latitude: Double, longitude: Double) { (self.latitude, self.longitude) = (latitude, longitude) }
    public var isValid: Bool { (-90...90).contains(latitude) && (-180...180).contains(longitude) }
}

/// Presence modes a user can choose for their profile.
public enum PresenceMode: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case online = 0, away = 1, hidden = 2
    public var description: String { ["online", "away", "hidden"][Int(rawValue)] }
}

/// Task states of the Task Tracker.
public enum TaskStatus: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case open = 0, inProgress = 1, complete = 2
    public var description: String { ["open", "in-progress", "complete"][Int(rawValue)] }
    /// Parses `open`, `in-progress` (or `inprogress`, `in_progress`), `complete` (or `done`).
    public init?(text: String) {
        switch text.lowercased() {
        case "open": self = .open
        case "in-progress", "inprogress", "in_progress", "progress": self = .inProgress
        case "complete", "completed", "done": self = .complete
        default: return nil
        }
    }
}

/// A change to one optional field: leave it, set it, or clear it.
public enum FieldChange<Value: Hashable & Sendable>: Hashable, Sendable {
    case unchanged, set(Value), cleared
}

/// The decoded body of an op; one case per `OperationType` (docs/DESIGN.md §3.4).
///
/// This is the plaintext. In a conversation, content bodies travel encrypted
/// (`EncryptedBody`) and an invite travels sealed (`Invite`); the store seals and opens them.
public enum OperationBody: Hashable, Sendable {
    case post(text: String, attachments: [Attachment], location: Location?, replyTo: OpID?)
    /// Replaces the text of the author's own post `target`, which is their op number `targetSeq`
    /// in the same partition (the seq makes the check a lookup along the author's own chain).
    /// Local callers may leave `targetSeq` at 0: the store fills it in before signing.
    case edit(target: OpID, targetSeq: UInt64 = 0, text: String)
    /// Deletes the author's own post `target` (their op number `targetSeq`); a tombstone.
    /// `erasing`: the seqs of the author's edits of that post, increasing, which replicas erase
    /// with it (`Erasure`); at most `Operation.maxErasedEdits`. Empty, it encodes as before.
    /// Local callers may leave it empty with `targetSeq` 0: the store fills both in.
    case delete(target: OpID, targetSeq: UInt64 = 0, erasing: [UInt64] = [])
    case react(target: OpID, emoji: String, on: Bool)
    /// A directory entry; `subject` must be the author. Nil fields are unchanged.
    case profile(subject: UserID, nick: String?, displayName: String?, status: String?, presence: PresenceMode?, avatar: Attachment?)
    /// `device` is one of `person`'s devices (see `DeviceCertificate`).
    case deviceCertificate(DeviceCertificate)
    /// `device` is lost: its writes past the cutoff are refused (see `DeviceRevocation`).
    case deviceRevocation(DeviceRevocation)
    /// Creates a conversation naming its first members. On the wire `name` MUST be empty: a
    /// conversation's name is private, so the store moves it into an encrypted rename authored
    /// right after the create.
    case conversationCreate(name: String, members: [UserID])
    case memberAdd(UserID)
    case memberRemove(UserID)
    case memberLeave
    case conversationRename(name: String)
    /// An epoch key sealed to members (see `KeyGrant`).
    case keyGrant(KeyGrant)
    case taskCreate(title: String, owner: UserID?)
    case taskUpdate(target: OpID, title: String?, status: TaskStatus?, owner: FieldChange<UserID>)
    case taskDelete(target: OpID)
    /// Everything in `partition` up to `position` has been read (kept in the reader's own partition).
    case readMarker(partition: PartitionID, position: HLC)
    /// `partition` muted (no bell, no notification) or unmuted, by its reader.
    case chatMute(partition: PartitionID, muted: Bool)
    /// "You were added to this conversation", sealed to an inbox's owner (see `Invite`).
    case invite(conversation: PartitionDescriptor)
    /// The first op of a private room's new epoch (a passphrase change, docs/DESIGN.md §3.7):
    /// names the epoch it replaces by its room key and hands on that epoch's content key, so
    /// holders of the new passphrase read the earlier history; all zeros (`withheldKey`) when the
    /// change keeps the history from new joiners. Encrypted under the new key.
    case roomLink(predecessor: Bytes32, contentKey: Bytes32)
    /// "This room's passphrase was changed": written into the old epoch, encrypted under the old
    /// key, so holders of the old passphrase see why nothing more arrives there.
    case roomNotice
    /// A room's whole policy; only the room's owner's take effect (`RoomPolicyState`).
    case roomPolicy(RoomPolicy)

    public var type: OperationType {
        switch self {
        case .post: .post
        case .edit: .edit
        case .delete: .delete
        case .react: .react
        case .profile: .profile
        case .deviceCertificate: .deviceCertificate
        case .deviceRevocation: .deviceRevocation
        case .conversationCreate: .conversationCreate
        case .memberAdd: .memberAdd
        case .memberRemove: .memberRemove
        case .memberLeave: .memberLeave
        case .conversationRename: .conversationRename
        case .keyGrant: .keyGrant
        case .taskCreate: .taskCreate
        case .taskUpdate: .taskUpdate
        case .taskDelete: .taskDelete
        case .readMarker: .readMarker
        case .chatMute: .chatMute
        case .invite: .invite
        case .roomLink: .roomLink
        case .roomNotice: .roomNotice
        case .roomPolicy: .roomPolicy
        }
    }
}

// MARK: - Encoding

extension OperationBody {
    /// The body bytes. Field limits are the caller's to check first (`validate()`).
    public var encoded: [UInt8] {
        var w = ByteWriter()
        switch self {
        case .post(let text, let attachments, let location, let replyTo):
            w.string16(text)
            w.u8(UInt8(attachments.count))
            for a in attachments { w.attachment(a) }
            w.optional(location) { w, l in
                w.u64(l.latitude.bitPattern); w.u64(l.longitude.bitPattern)
            }
            w.optional(replyTo) { w, id in w.opID(id) }
        case .edit(let target, let targetSeq, let text):
            w.opID(target); w.u64(targetSeq); w.string16(text)
        case .delete(let target, let targetSeq, let erasing):
            w.opID(target); w.u64(targetSeq)
            if !erasing.isEmpty {
                w.u16(UInt16(erasing.count))
                for seq in erasing { w.u64(seq) }
            }
        case .taskDelete(let target):
            w.opID(target)
        case .react(let target, let emoji, let on):
            w.opID(target); w.string16(emoji); w.u8(on ? 1 : 0)
        case .profile(let subject, let nick, let displayName, let status, let presence, let avatar):
            w.user(subject)
            w.optional(nick) { w, v in w.string16(v) }
            w.optional(displayName) { w, v in w.string16(v) }
            w.optional(status) { w, v in w.string16(v) }
            w.optional(presence) { w, v in w.u8(v.rawValue) }
            w.optional(avatar) { w, v in w.attachment(v) }
        case .deviceCertificate(let certificate):
            certificate.encode(to: &w)
        case .deviceRevocation(let revocation):
            revocation.encode(to: &w)
        case .conversationCreate(let name, let members):
            w.string16(name)
            w.u16(UInt16(members.count))
            for m in members { w.user(m) }
        case .memberAdd(let user), .memberRemove(let user):
            w.user(user)
        case .memberLeave:
            break
        case .conversationRename(let name):
            w.string16(name)
        case .keyGrant(let grant):
            grant.encode(to: &w)
        case .taskCreate(let title, let owner):
            w.string16(title)
            w.optional(owner) { w, v in w.user(v) }
        case .taskUpdate(let target, let title, let status, let owner):
            w.opID(target)
            w.optional(title) { w, v in w.string16(v) }
            w.optional(status) { w, v in w.u8(v.rawValue) }
            switch owner {
            case .unchanged: w.u8(0)
            case .set(let user): w.u8(1); w.user(user)
            case .cleared: w.u8(2)
            }
        case .readMarker(let partition, let position):
            w.partitionID(partition); w.u64(position.raw)
        case .chatMute(let partition, let muted):
            w.partitionID(partition); w.u8(muted ? 1 : 0)
        case .invite(let descriptor):
            w.raw(descriptor.encoded)
        case .roomLink(let predecessor, let contentKey):
            w.bytes32(predecessor); w.bytes32(contentKey)
        case .roomNotice:
            break
        case .roomPolicy(let policy):
            policy.encode(to: &w)
        }
        return w.bytes
    }

    /// Why this body breaks a field limit, or nil. Checked before signing and after decoding.
    public func validate() -> String? {
        func check(_ text: String, _ limit: Int, _ field: String) -> String? {
            text.utf8.count > limit ? "\(field) is over \(limit) bytes" : nil
        }
        switch self {
        case .post(let text, let attachments, let location, _):
            if attachments.count > BodyLimits.attachments { return "more than \(BodyLimits.attachments) attachments" }
            if let problem = attachments.lazy.compactMap(\.problem).first { return problem }
            if let location, !location.isValid { return "location is not a valid latitude,longitude" }
            if text.isEmpty && attachments.isEmpty { return "message text is empty" }
            return check(text, BodyLimits.textBytes, "message text")
        case .edit(_, _, let text):
            if text.isEmpty { return "message text is empty" }
            return check(text, BodyLimits.textBytes, "message text")
        case .react(_, let emoji, _):
            if emoji.isEmpty { return "reaction is empty" }
            return check(emoji, BodyLimits.emojiBytes, "reaction")
        case .profile(_, let nick, let displayName, let status, _, let avatar):
            if let problem = avatar?.problem { return problem }
            return nick.flatMap { check($0, BodyLimits.nameBytes, "nickname") }
                ?? displayName.flatMap { check($0, BodyLimits.nameBytes, "display name") }
                ?? status.flatMap { check($0, BodyLimits.statusBytes, "status") }
        case .conversationCreate(let name, let members):
            if members.count > BodyLimits.members { return "more than \(BodyLimits.members) members" }
            return check(name, BodyLimits.nameBytes, "conversation name")
        case .conversationRename(let name):
            return check(name, BodyLimits.nameBytes, "conversation name")
        case .taskCreate(let title, _):
            if title.isEmpty { return "task title is empty" }
            return check(title, BodyLimits.textBytes, "task title")
        case .taskUpdate(_, let title, _, _):
            if let title, title.isEmpty { return "task title is empty" }
            return title.flatMap { check($0, BodyLimits.textBytes, "task title") }
        case .keyGrant(let grant):
            return grant.validate()
        case .invite(let descriptor):
            return descriptor.kind == .conversation ? nil : "an invite must name a conversation"
        case .delete(_, _, let erasing):
            return erasing.count > Operation.maxErasedEdits ? "a delete erases at most \(Operation.maxErasedEdits) edits" : nil
        case .roomPolicy(let policy):
            return policy.problem
        case .deviceCertificate(let certificate):
            return DeviceCertificate.nameProblem(certificate.name)
        case .deviceRevocation(let revocation):
            if revocation.cutoffs.count > DeviceRevocation.maxCutoffs { return "a revocation lists more than \(DeviceRevocation.maxCutoffs) partitions" }
            return nil
        case .taskDelete, .memberAdd, .memberRemove, .memberLeave, .readMarker, .chatMute, .roomLink, .roomNotice:
            return nil
        }
    }
}

// MARK: - Decoding

extension OperationBody {
    /// Decodes a body of the given type; refuses trailing bytes, oversized fields and bad values.
    public init(type rawType: UInt8, decoding bytes: [UInt8]) throws(WireDecodingError) {
        guard let type = OperationType(rawValue: rawType) else { throw .invalidValue(field: "op type \(rawType)") }
        var r = ByteReader(bytes)
        switch type {
        case .post:
            let text = try r.string16("text", limit: BodyLimits.textBytes)
            let count = Int(try r.u8("attachment count"))
            guard count <= BodyLimits.attachments else { throw .tooLong(field: "attachments", length: count, limit: BodyLimits.attachments) }
            var attachments: [Attachment] = []
            for _ in 0..<count { attachments.append(try r.attachment()) }
            let location = try r.optional("location") { (r: inout ByteReader) throws(WireDecodingError) in
                Location(latitude: Double(bitPattern: try r.u64("latitude")), longitude: Double(bitPattern: try r.u64("longitude")))
            }
            let replyTo = try r.optional("reply to") { (r: inout ByteReader) throws(WireDecodingError) in try r.opID("reply to") }
            self = .post(text: text, attachments: attachments, location: location, replyTo: replyTo)
        case .edit:
            self = .edit(target: try r.opID("target"), targetSeq: try r.u64("target seq"), text: try r.string16("text", limit: BodyLimits.textBytes))
        case .delete:
            // `target ‖ target seq`, then, only when the delete erases edits: `count u16`
            // (1…4,096) ‖ count × `seq u64`, increasing, each above the target seq.
            let target = try r.opID("target")
            let targetSeq = try r.u64("target seq")
            var erasing: [UInt64] = []
            if r.remaining > 0 {
                let count = Int(try r.u16("erased edit count"))
                guard (1...Operation.maxErasedEdits).contains(count) else {
                    throw .tooLong(field: "erased edits", length: count, limit: Operation.maxErasedEdits)
                }
                erasing.reserveCapacity(count)
                for _ in 0..<count {
                    let seq = try r.u64("erased edit seq")
                    guard seq > (erasing.last ?? targetSeq) else { throw .invalidValue(field: "erased edit seqs must increase, above the target seq") }
                    erasing.append(seq)
                }
            }
            self = .delete(target: target, targetSeq: targetSeq, erasing: erasing)
        case .react:
            let target = try r.opID("target")
            let emoji = try r.string16("emoji", limit: BodyLimits.emojiBytes)
            let on = try r.u8("reaction on")
            guard on <= 1 else { throw .invalidValue(field: "reaction on") }
            self = .react(target: target, emoji: emoji, on: on == 1)
        case .profile:
            let subject = try r.user("subject")
            let nick = try r.optional("nick") { (r: inout ByteReader) throws(WireDecodingError) in try r.string16("nick", limit: BodyLimits.nameBytes) }
            let displayName = try r.optional("display name") { (r: inout ByteReader) throws(WireDecodingError) in
                try r.string16("display name", limit: BodyLimits.nameBytes)
            }
            let status = try r.optional("status") { (r: inout ByteReader) throws(WireDecodingError) in try r.string16("status", limit: BodyLimits.statusBytes) }
            let presence = try r.optional("presence") { (r: inout ByteReader) throws(WireDecodingError) in
                guard let mode = PresenceMode(rawValue: try r.u8("presence")) else { throw WireDecodingError.invalidValue(field: "presence") }
                return mode
            }
            let avatar = try r.optional("avatar") { (r: inout ByteReader) throws(WireDecodingError) in try r.attachment() }
            self = .profile(subject: subject, nick: nick, displayName: displayName, status: status, presence: presence, avatar: avatar)
        case .deviceCertificate:
            self = .deviceCertificate(try DeviceCertificate(reading: &r))
        case .deviceRevocation:
            self = .deviceRevocation(try DeviceRevocation(reading: &r))
        case .conversationCreate:
            let name = try r.string16("conversation name", limit: BodyLimits.nameBytes)
            let count = Int(try r.u16("member count"))
            guard count <= BodyLimits.members else { throw .tooLong(field: "members", length: count, limit: BodyLimits.members) }
            var members: [UserID] = []
            for _ in 0..<count { members.append(try r.user("member")) }
            self = .conversationCreate(name: name, members: members)
        case .memberAdd:
            self = .memberAdd(try r.user("member"))
        case .memberRemove:
            self = .memberRemove(try r.user("member"))
        case .memberLeave:
            self = .memberLeave
        case .conversationRename:
            self = .conversationRename(name: try r.string16("conversation name", limit: BodyLimits.nameBytes))
        case .keyGrant:
            self = .keyGrant(try KeyGrant(reading: &r))
        case .taskCreate:
            let title = try r.string16("task title", limit: BodyLimits.textBytes)
            let owner = try r.optional("owner") { (r: inout ByteReader) throws(WireDecodingError) in try r.user("owner") }
            self = .taskCreate(title: title, owner: owner)
        case .taskUpdate:
            let target = try r.opID("target")
            let title = try r.optional("title") { (r: inout ByteReader) throws(WireDecodingError) in try r.string16("task title", limit: BodyLimits.textBytes) }
            let status = try r.optional("status") { (r: inout ByteReader) throws(WireDecodingError) in
                guard let s = TaskStatus(rawValue: try r.u8("status")) else { throw WireDecodingError.invalidValue(field: "status") }
                return s
            }
            let owner: FieldChange<UserID>
            switch try r.u8("owner change") {
            case 0: owner = .unchanged
            case 1: owner = .set(try r.user("owner"))
            case 2: owner = .cleared
            default: throw .invalidValue(field: "owner change")
            }
            self = .taskUpdate(target: target, title: title, status: status, owner: owner)
        case .taskDelete:
            self = .taskDelete(target: try r.opID("target"))
        case .readMarker:
            self = .readMarker(partition: try r.partitionID("partition"), position: HLC(raw: try r.u64("position")))
        case .chatMute:
            let partition = try r.partitionID("partition")
            let muted = try r.u8("muted")
            guard muted <= 1 else { throw .invalidValue(field: "muted") }
            self = .chatMute(partition: partition, muted: muted == 1)
        case .invite:
            self = .invite(conversation: try PartitionDescriptor(decoding: r.raw(r.remaining, "conversation")))
        case .roomLink:
            self = .roomLink(predecessor: try r.bytes32("predecessor"), contentKey: try r.bytes32("content key"))
        case .roomNotice:
            self = .roomNotice
        case .roomPolicy:
            self = .roomPolicy(try RoomPolicy(reading: &r))
        }
        try r.expectEnd()
        if let problem = validate() { throw .invalidValue(field: problem) }
    }
}

extension ByteWriter {
    mutating func attachment(_ a: Attachment) {
        string16(a.name); u64(a.size); string16(a.mime); bytes32(a.hash)
    }
}

extension ByteReader {
    mutating func attachment() throws(WireDecodingError) -> Attachment {
        Attachment(
            name: try string16("attachment name", limit: BodyLimits.nameBytes * 2), size: try u64("attachment size"),
            mime: try string16("attachment mime", limit: BodyLimits.nameBytes), hash: try bytes32("attachment hash"))
    }
}

extension OperationBody {
    /// The content key a room link carries when the passphrase change gives new joiners no
    /// history: no key at all (docs/DESIGN.md §3.7).
    public static let withheldKey = Bytes32([UInt8](repeating: 0, count: 32))!
}
