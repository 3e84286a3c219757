import Foundation
import Identity
import NodeRuntime
import Presentation
import Replica
import Store

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

    static func userID(_ text: String, field: String) throws(WebError) -> UserID {
        guard let user = UserID(text: text.lowercased()), user.canReceiveSealedBoxes else {
            throw .badRequest("\(field) must be a user id (52 characters of a-z and 2-7), not '\(text.prefix(80))'")
        }
        return user
    }

    static func opID(_ text: String, what: String) throws(WebError) -> OpID {
        guard let id = OpID(text: text.lowercased()) else { throw .badRequest("'\(text.prefix(80))' is not a \(what) id (52 characters of a-z and 2-7)") }
        return id
    }

    /// The room or conversation a path names: a partition id (as `rooms` and `conversations`
    /// list them) or a room's name. Only joined rooms and conversations this user is or was in.
    static func partition(_ text: String, _ call: Call) async throws -> PartitionID {
        let me = call.access.identity.id
        let id: PartitionID
        if let parsed = PartitionID(text: text.lowercased()) {
            id = parsed
        } else if let room = RoomName(text) {
            id = try await call.access.read { try $0.privateRoom(named: room)?.id } ?? PartitionDescriptor.room(room).id
        } else {
            throw WebError.badRequest("'\(text.prefix(80))' is neither a partition id nor a room name")
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
        let me = call.access.identity.id
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
        let me = call.access.identity.id
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
        guard let name = object["name"] as? String, !name.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw .badRequest("\(field).name must be a file name")
        }
        guard name.utf8.count <= BodyLimits.nameBytes * 2 else { throw .badRequest("\(field).name is over \(BodyLimits.nameBytes * 2) bytes") }
        let mime = (object["mime"] as? String).flatMap { $0.isEmpty ? nil : $0 } ?? "application/octet-stream"
        guard mime.utf8.count <= BodyLimits.nameBytes, mime.contains("/") else { throw .badRequest("\(field).mime must be a media type") }
        guard let data = object["data"] as? String, let decoded = Data(base64Encoded: data) else {
            throw .badRequest("\(field).data must be the file's content in base64")
        }
        guard decoded.count <= Blobs.maxBlobBytes else { throw .tooLarge(limit: Blobs.maxBlobBytes) }
        return File(name: name, mime: mime.lowercased(), bytes: Array(decoded))
    }

    /// File content as a response; only common image types are shown inline, everything else
    /// is a download (an SVG or HTML file from a peer must never run as this site's page).
    static func content(_ bytes: [UInt8], mime: String, name: String) -> HTTPReply {
        let inline = ["image/png", "image/jpeg", "image/gif", "image/webp"].contains(mime)
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
