import Identity
import Presentation
import Replica
import Store

/// The JSON objects of the views every interface shows: `--json` output of the commands, the
/// web API and anything else that speaks JSON. One place, so the shapes of docs/DESIGN.md §6.1 (a
/// contract: add fields freely, never rename) cannot drift apart between interfaces.
public enum ViewJSON {
    /// One message of `history`.
    public static func message(_ message: MessageView) -> JSON {
        var reactions: [String: JSON] = [:]
        for (emoji, users) in message.reactions {
            reactions[emoji] = .array(users.sorted().map { .string($0.text) })
        }
        return .object([
            "id": .string(message.id.text),
            "author": .string(message.author.text),
            "nick": .optional(message.nick),
            "time": .string(Format.isoTime(millis: message.hlc.wallMillis)),
            "hlc": .unsigned(message.hlc.raw),
            "seq": .unsigned(message.seq),
            "text": .string(message.text),
            "edited": .bool(message.edited),
            "deleted": .bool(message.deleted),
            "reactions": .object(reactions),
            "attachments": .array(message.attachments.map(attachment)),
            "location": message.location.map { .object(["lat": .number($0.latitude), "lon": .number($0.longitude)]) } ?? .null,
            "reply_to": message.replyTo.map { .string($0.text) } ?? .null,
            "read_by": .array(message.readBy.map { .string($0.text) }),
        ])
    }

    /// An attachment or avatar: `name`, `size`, `mime`, `hash` (hex).
    public static func attachment(_ attachment: Attachment) -> JSON {
        .object([
            "name": .string(attachment.name), "size": .unsigned(attachment.size), "mime": .string(attachment.mime),
            "hash": .string(hex(attachment.hash.bytes)),
        ])
    }

    /// One room of `rooms`: `private` is true for a room protected by a passphrase; the policy
    /// fields (`roomPolicy`) for a public room.
    public static func room(
        name: RoomName, id: PartitionID, unread: Int, isPrivate: Bool = false, policy: RoomPolicyView? = nil, muted: Bool = false
    )
        -> JSON
    {
        var fields: [String: JSON] = [
            "name": .string(name.value), "partition": .string(id.text), "unread": .integer(Int64(unread)), "private": .bool(isPrivate),
            "muted": .bool(muted),
        ]
        fields.merge(roomPolicy(policy)) { $1 }
        return .object(fields)
    }

    /// A joined room as `rooms --json` and `GET /api/rooms` list it.
    public static func room(_ room: ReplicaStore.JoinedRoom) -> JSON {
        Self.room(name: room.name, id: room.id, unread: room.unread, isPrivate: room.isPrivate, policy: room.policy, muted: room.muted)
    }

    /// A room's policy fields: `topic` (empty when none), `retention` (`all`, `30d`, `500m`),
    /// `history` (whether new joiners see older messages), `owner` (null when nobody set a policy).
    public static func roomPolicy(_ view: RoomPolicyView?) -> [String: JSON] {
        let policy = view?.policy ?? .default
        return [
            "topic": .string(policy.topic), "retention": .string(policy.retention.description), "history": .bool(policy.historyForNewJoiners),
            "owner": view.map { .string($0.owner.text) } ?? .null,
        ]
    }

    /// One room of `rooms --all`: the directory's `name`, `topic`, `people` and whether this
    /// node's user `joined` it.
    public static func directoryRoom(name: RoomName, topic: String, people: Int, joined: Bool) -> JSON {
        .object(["name": .string(name.value), "topic": .string(topic), "people": .integer(Int64(people)), "joined": .bool(joined)])
    }

    /// One conversation of `conversations`.
    public static func conversation(_ conversation: ConversationSummary) -> JSON {
        .object([
            "id": .string(conversation.id.text), "name": .string(conversation.name),
            "members": .array(conversation.members.map { .string($0.text) }), "unread": .integer(Int64(conversation.unread)),
            "creator": .string(conversation.creator.text), "member": .bool(conversation.isMember), "muted": .bool(conversation.muted),
        ])
    }

    /// A device of the person (`device list --json`, `GET /api/devices`); `this` is the device
    /// that answers.
    public static func device(_ device: DeviceView, this: UserID) -> JSON {
        .object([
            "id": .string(device.device.text), "name": .string(device.name), "this": .bool(device.device == this),
            "first": .bool(device.isPersonKey), "revoked": .bool(device.revoked),
            "certified_by": device.certifier.map { .string($0.text) } ?? .null,
            "certified_at": device.certifiedAt.map { .string(Format.isoTime(millis: $0.wallMillis)) } ?? .null,
        ])
    }

    /// One person of `people`; `forks` counts the partitions where a key of theirs forked.
    public static func person(_ person: PersonView) -> JSON {
        .object([
            "id": .string(person.user.text), "nick": .optional(person.nick), "display_name": .optional(person.displayName),
            "status": .optional(person.status), "presence": .string(person.presence.rawValue),
            "last_seen": person.lastSeenMillis.map { .string(Format.isoTime(millis: $0)) } ?? .null, "me": .bool(person.isMe),
            "avatar": person.avatar.map(attachment) ?? .null, "forks": .integer(Int64(person.forks)),
        ])
    }

    /// One task of `tasks`.
    public static func task(_ task: TaskView) -> JSON {
        .object([
            "id": .string(task.id.text), "title": .string(task.title), "status": .string(task.status.description),
            "owner": task.owner.map { .string($0.text) } ?? .null, "creator": task.creator.map { .string($0.text) } ?? .null,
        ])
    }

    /// Lowercase hex (attachment hashes in JSON are hex, as blob names usually are).
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef")
        var text = ""
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return text
    }
}
