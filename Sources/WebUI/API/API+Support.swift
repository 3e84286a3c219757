import Foundation
import Identity
import NodeRuntime
import Presentation
import Replica
import Store
import Wire

/// The handlers of the JSON API, one static function per endpoint, grouped by facet
/// (`API+Messages.swift`, ...). Each checks its input, then reads or writes through `NodeAccess`.
enum API {
    static func json(_ value: JSON, status: Int = 200) -> HTTPReply { .response(.json(value.text, status: status)) }
    static var noContent: HTTPReply { .response(HTTPResponse(status: 204)) }

    /// A store error as the API's answer: the state of things refused it (409), the input was
    /// wrong (400), it names nothing here (404), or this node failed (500).
    static func webError(_ error: any Error) -> WebError {
        switch error {
        case let error as WebError: return error
        case let error as StoreError:
            switch error {
            case .rejected, .notMember: return .conflict("the change was refused: \(error.description)")
            case .invalidInput(let why): return .badRequest(why)
            case .unknownPartition, .notFound: return .notFound(error.description)
            case .damaged: return .internalError(error.description)
            }
        case let error as NodeError: return .unavailable("the node cannot answer now: \(error.description)")
        default: return .internalError("this node failed: \(error)")
        }
    }

    // MARK: Ids from paths and bodies

    /// An id the route's schema has let through (52 characters of base32, capitals allowed).
    static func parsed<ID: Bytes32Identifier>(_ text: String, as: ID.Type) -> ID? {
        text.utf8.allSatisfy { $0 < 0x80 } ? ID(text: text.lowercased()) : nil
    }

    /// A user id. One that is not a public key names no one: in a path that is 404 (the path
    /// names nothing here), in a body 422 (the request is well-formed but cannot be carried out;
    /// a 404 would say the path's room or conversation is missing).
    static func userID(_ text: String, field: String, inPath: Bool = false) throws(WebError) -> UserID {
        guard let user = parsed(text, as: UserID.self) else {
            throw .badRequest("\(field) must be a user id (52 characters of a-z and 2-7), not '\(text.prefix(80))'")
        }
        guard user.canReceiveSealedBoxes else {
            let problem = "\(field): no one has the id \(user.text) (it is not a public key)"
            throw inPath ? .notFound(problem) : .unprocessable(problem)
        }
        return user
    }

    static func opID(_ text: String, what: String) throws(WebError) -> OpID {
        guard let id = parsed(text, as: OpID.self) else { throw .badRequest("'\(text.prefix(80))' is not a \(what) id (52 characters of a-z and 2-7)") }
        return id
    }

    /// A field's UTF-8 byte limit, which its schema states as characters: over it is 413.
    static func checkBytes(_ text: String, _ limit: Int, field: String) throws(WebError) {
        guard text.utf8.count <= limit else {
            throw .fieldTooLong("\(field) is \(text.utf8.count) UTF-8 bytes, over its limit of \(limit); shorten it")
        }
    }

    /// The room or conversation a path names: a partition id (as `rooms` and `conversations`
    /// list them) or a room's name. Only joined rooms and conversations this user is or was in;
    /// anything else, a name too long to be a room's among it, is 404.
    static func partition(_ text: String, _ call: Call) async throws -> PartitionID {
        let me = call.access.me
        let id: PartitionID
        if let parsed = parsed(text, as: PartitionID.self) {
            id = parsed
        } else if let room = RoomName(text) {
            id = try await call.access.read { try $0.privateRoom(named: room)?.id } ?? PartitionDescriptor.room(room).id
        } else {
            throw WebError.notFound("no room or conversation \(text.prefix(80)) here: \(RoomName.problem(with: text) ?? "not a room name")")
        }
        try await call.access.read { store in
            guard let record = try store.log.partition(id) else { throw WebError.notFound("no room or conversation \(text.prefix(80)) here") }
            switch record.descriptor {
            case .room:
                guard record.joined else { throw WebError.notFound("you have not joined \(text.prefix(80)); POST /api/rooms joins it") }
            case .privateRoom:
                guard record.joined, try store.privateRoomName(id) != nil else {
                    throw WebError.notFound("you do not hold private room \(text.prefix(80)); POST /api/rooms with its passphrase joins it")
                }
            case .conversation:
                guard try store.views.conversation(id)?.members.everMember.contains(me) ?? false else {
                    throw WebError.notFound("you are not a member of conversation \(id.text)")
                }
            case .directory, .inbox, .ownData:
                throw WebError.notFound("\(text.prefix(80)) is not a room or conversation")
            }
        }
        return id
    }

    /// Whether this user may see what is in `partition` (a joined room, or a conversation they
    /// are or were in).
    static func canSee(_ partition: PartitionID, _ store: ReplicaStore, me: UserID) throws -> Bool {
        guard let record = try store.log.partition(partition) else { return false }
        switch record.descriptor {
        case .room: return record.joined
        case .privateRoom: return try record.joined && store.privateRoomName(partition) != nil
        case .conversation: return try store.views.conversation(partition)?.members.everMember.contains(me) ?? false
        case .directory, .inbox, .ownData: return false
        }
    }

    /// The message a path names, with its partition; 404 when there is none or it is not visible.
    static func message(_ text: String, _ call: Call) async throws -> (partition: PartitionID, message: MessageView) {
        let id = try opID(text, what: "message")
        let me = call.access.me
        return try await call.access.read { store in
            guard let found = try store.views.message(id), try canSee(found.partition, store, me: me) else {
                throw WebError.notFound("no message \(id.text) here")
            }
            return found
        }
    }

    /// The task a path names, with its partition; 404 when there is none (or it was deleted).
    static func task(_ text: String, _ call: Call) async throws -> (partition: PartitionID, task: TaskView) {
        let id = try opID(text, what: "task")
        let me = call.access.me
        return try await call.access.read { store in
            guard let found = try store.views.task(id), try canSee(found.partition, store, me: me) else {
                throw WebError.notFound("no task \(id.text) here (or it was deleted)")
            }
            return found
        }
    }

    /// A file sent as `{name, mime, data}` (data in base64), at most 8 MiB once decoded.
    struct File: Sendable {
        let name: String
        let mime: String
        let bytes: [UInt8]
    }

    static func file(_ object: [String: Any], field: String) throws(WebError) -> File {
        guard let name = object["name"] as? String, !Text.trimmed(name).isEmpty else { throw .badRequest("\(field).name must be a file name") }
        try checkBytes(name, BodyLimits.nameBytes * 2, field: "\(field).name")
        let given = Text.trimmed(object["mime"] as? String ?? "")
        try checkBytes(given, BodyLimits.nameBytes, field: "\(field).mime")
        let mime = given.isEmpty ? "application/octet-stream" : given
        guard mime.contains("/") else { throw .badRequest("\(field).mime must be a media type") }
        // The schema's pattern has checked the alphabet and the padding; a final line break that
        // its `$` lets through is not content.
        guard let data = object["data"] as? String, let decoded = Data(base64Encoded: data, options: .ignoreUnknownCharacters) else {
            throw .badRequest("\(field).data must be the file's content in base64")
        }
        guard decoded.count <= Blobs.maxBlobBytes else { throw .tooLarge(limit: Blobs.maxBlobBytes) }
        return File(name: name, mime: mime.lowercased(), bytes: Array(decoded))
    }

    /// The media types shown inline: common images that cannot run script.
    static let inlineTypes = ["image/png", "image/jpeg", "image/gif", "image/webp"]

    /// File content as a response; only common image types are shown inline, everything else
    /// is a download (an SVG or HTML file from a peer must never run as this site's page).
    static func content(_ bytes: [UInt8], mime: String, name: String) -> HTTPReply {
        let inline = inlineTypes.contains(mime)
        let safeName = String(name.unicodeScalars.filter { $0.isASCII && $0.value >= 0x20 && $0 != "\"" && $0 != "\\" }.map(Character.init))
        return .response(
            HTTPResponse(
                status: 200,
                headers: [
                    ("Content-Type", inline ? mime : "application/octet-stream"),
                    ("Content-Disposition", (inline ? "inline" : "attachment") + "; filename=\"\(safeName)\""),
                    // Content named by a message id and index, or an avatar URL carrying its
                    // hash, never changes: the browser may keep it.
                    ("Cache-Control", "private, max-age=86400"),
                ], body: bytes))
    }
}
