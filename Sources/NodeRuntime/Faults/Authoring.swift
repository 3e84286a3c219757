import Identity
import Replica
import Store

/// One change for the node to write as its user (`author` on the control socket). Fields are
/// checked like command-line input; an error names the field and the fix.
///
/// | kind | needs |
/// |---|---|
/// | `post` | `room` or `conversation`, `text` |
/// | `edit` | `room` or `conversation`, `target` (own post), `text` |
/// | `delete` | `room` or `conversation`, `target` (own post) |
/// | `react` | `room` or `conversation`, `target`, `emoji` (`on` defaults to true) |
/// | `task-add` | `room` or `conversation`, `text` (the title) |
/// | `task-set` | `room` or `conversation`, `target` (a task), `status` and/or `text` |
/// | `conversation-create` | `members` (user ids), optional `text` (the name) |
/// | `member-add`, `member-remove` | `conversation`, `member` |
public struct AuthorRequest: Codable, Sendable, Equatable {
    public var kind: String
    public var room: String?
    public var conversation: String?
    public var text: String?
    public var target: String?
    public var emoji: String?
    public var on: Bool?
    public var status: String?
    public var members: [String]?
    public var member: String?

    public init(
        kind: String, room: String? = nil, conversation: String? = nil, text: String? = nil, target: String? = nil,
        emoji: String? = nil, status: String? = nil, members: [String]? = nil, member: String? = nil
    ) {
        (self.kind, self.room, self.conversation, self.text, self.target) = (kind, room, conversation, text, target)
        (self.emoji, self.status, self.members, self.member) = (emoji, status, members, member)
    }

    /// The kinds `author` knows.
    public static let kinds = [
        "post", "edit", "delete", "react", "task-add", "task-set", "conversation-create", "member-add", "member-remove",
    ]
}

/// The answer to `author`: the op that carries the change, once stored and handed to the links.
public struct AuthorReport: Codable, Sendable, Equatable {
    /// The op id (a message's or task's id), text form.
    public var id: String
    /// The partition it was written to (for `conversation-create`, the new conversation's id).
    public var partition: String
    public var author: String
    public var seq: UInt64
    /// The op's HLC (raw 64 bits: Unix milliseconds << 16 | counter), from the skewed clock.
    public var hlc: UInt64
    /// Ops written in all (a create also writes grants, a rename and invites).
    public var ops: Int
}

extension Node {
    /// `author`: writes the change through `Node.write`, in the node's own store, so its HLC
    /// follows every op the node has seen, and every op it wrote goes to the linked peers at once.
    func author(_ request: AuthorRequest?) -> ControlResponse {
        guard isRunning else { return .failure("the node is stopping") }
        guard let request else {
            return .failure("author needs an \"author\" object, e.g. {\"kind\": \"post\", \"room\": \"lobby\", \"text\": \"hi\"}")
        }
        let (identity, now) = (identity, wallMillis)
        do {
            let (op, count) = try write { store in
                let op = try Self.write(request, store: store, identity: identity, now: now)
                let count = try store.log.opCountSinceMark ?? store.log.firstOpRowIDSinceMark.map { try store.log.opCount(afterRowID: $0 - 1) } ?? 0
                return (op, count)
            }
            return ControlResponse(
                author: AuthorReport(
                    id: op.id.text, partition: op.partition.text, author: op.author.text, seq: op.seq, hlc: op.hlc.raw, ops: count))
        } catch let error as AuthorError {
            return .failure(error.description)
        } catch {
            return .failure("\(request.kind): \(error)")
        }
    }

    private static func write(_ request: AuthorRequest, store: ReplicaStore, identity: Identity, now: UInt64) throws -> Operation {
        if request.kind == "conversation-create" {
            let members = try (request.members ?? []).map { try AuthorError.user($0, field: "members") }
            let descriptor = try store.createConversation(name: request.text ?? "", members: members, by: identity, nowMillis: now)
            guard let create = try store.log.ops(in: descriptor.id, author: identity.id, fromSeq: 1, limit: 1).first else {
                throw AuthorError("conversation-create: the create op was not stored")
            }
            return create
        }
        let partition = try target(request, store: store)
        return try store.author(try body(request), in: partition, by: identity, nowMillis: now)
    }

    /// The room (joined if it was not) or conversation the change goes to.
    private static func target(_ request: AuthorRequest, store: ReplicaStore) throws -> PartitionID {
        switch (request.room, request.conversation) {
        case (let room?, nil):
            guard let name = RoomName(room) else {
                throw AuthorError("room: \(RoomName.problem(with: room) ?? "not a room name"); write e.g. \"lobby\"")
            }
            return try store.log.ensurePartition(.room(name), joined: true).id
        case (nil, let conversation?):
            guard let id = PartitionID(text: conversation) else {
                throw AuthorError("conversation: '\(conversation)' is not a conversation id (52 base32 characters)")
            }
            return id
        default:
            throw AuthorError("\(request.kind) needs exactly one of \"room\" and \"conversation\"")
        }
    }

    private static func body(_ request: AuthorRequest) throws -> OperationBody {
        func text(_ what: String) throws -> String {
            guard let text = request.text, !text.isEmpty else { throw AuthorError("\(request.kind) needs \"text\" (\(what))") }
            return text
        }
        func target() throws -> OpID {
            guard let text = request.target, let id = OpID(text: text) else {
                throw AuthorError("\(request.kind) needs \"target\": the op id of a message or task (52 base32 characters)")
            }
            return id
        }
        switch request.kind {
        case "post": return .post(text: try text("the message"), attachments: [], location: nil, replyTo: nil)
        case "edit": return .edit(target: try target(), text: try text("the new text"))
        case "delete": return .delete(target: try target())
        case "react":
            guard let emoji = request.emoji, !emoji.isEmpty else { throw AuthorError("react needs \"emoji\"") }
            return .react(target: try target(), emoji: emoji, on: request.on ?? true)
        case "task-add": return .taskCreate(title: try text("the title"), owner: nil)
        case "task-set":
            let status = try request.status.map { text in
                guard let status = TaskStatus(text: text) else { throw AuthorError("status must be open, in-progress or complete, not '\(text)'") }
                return status
            }
            guard status != nil || request.text != nil else { throw AuthorError("task-set needs \"status\" or \"text\"") }
            return .taskUpdate(target: try target(), title: request.text, status: status, owner: .unchanged)
        case "member-add": return .memberAdd(try AuthorError.user(request.member, field: "member"))
        case "member-remove": return .memberRemove(try AuthorError.user(request.member, field: "member"))
        default:
            throw AuthorError("unknown kind '\(request.kind)'; use one of: \(AuthorRequest.kinds.joined(separator: ", "))")
        }
    }
}

/// A bad `author` request; one line naming the field and the fix.
struct AuthorError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }

    static func user(_ text: String?, field: String) throws -> UserID {
        guard let text, let id = UserID(text: text) else {
            throw AuthorError("\(field): '\(text ?? "")' is not a user id (52 base32 characters, as `parley whoami` prints)")
        }
        return id
    }
}
