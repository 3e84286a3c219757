import Foundation
import Identity
import JSONViews
import Presentation
import Replica
import Store

extension API {
    // MARK: Messages

    /// The most messages one answer holds, and how many come without `limit`: an answer's size
    /// and time are bounded like every other (a whole room of 100,000 took 4 s to read). Older
    /// messages come page by page with `before`, newer ones with `after`.
    static let historyPage = 1_000

    static func history(_ call: Call) async throws -> HTTPReply {
        let partition = try await partition(call.parameter("partition"), call)
        var limit = historyPage
        if let text = call.request.query["limit"] {
            guard let value = Int(text), (1...historyPage).contains(value) else {
                throw WebError.badRequest(
                    "limit must be a whole number from 1 to \(historyPage), not '\(text.prefix(40))'; page back with before=ID")
            }
            limit = value
        }
        let before = try call.request.query["before"].map { try opID($0, what: "message") }
        let after = try call.request.query["after"].map { try opID($0, what: "message") }
        let anchor: Views.HistoryAnchor = before.map { .before($0) } ?? after.map { .after($0) } ?? .newest
        let newest = limit
        // An id that is not a message here is `StoreError.notFound`: a 404 (`API.webError`), also
        // when both are given, which is refused after.
        let messages = try await call.access.read { store in
            if let after, before != nil { _ = try store.views.history(partition, limit: 0, after: after) }
            return try store.views.history(partition, limit: newest, from: anchor)
        }
        if before != nil, after != nil {
            throw WebError.badRequest("give before=ID (a page back) or after=ID (a page forward), not both")
        }
        return json(.array(messages.map(ViewJSON.message)))
    }

    static func send(_ call: Call) async throws -> HTTPReply {
        let partition = try await partition(call.parameter("partition"), call)
        let body = try call.body
        let text = try body.string("text") ?? ""
        let files = try (body.objects("attachments") ?? []).enumerated().map { index, object throws(WebError) in
            try file(object, field: "attachments[\(index)]")
        }
        var location: Location?
        if let place = try body.object("location") {
            // The schema has checked both are numbers within -90...90 and -180...180.
            guard let latitude = place["lat"] as? NSNumber, let longitude = place["lon"] as? NSNumber else {
                throw WebError.badRequest("location must be {\"lat\": number, \"lon\": number}")
            }
            location = Location(latitude: latitude.doubleValue, longitude: longitude.doubleValue)
        }
        guard !Text.trimmed(text).isEmpty || !files.isEmpty else {
            throw WebError.badRequest("a message needs text or an attachment (a location comes with one of them)")
        }
        try checkBytes(text, BodyLimits.textBytes, field: "text")
        let identity = call.access.identity
        let place = location
        let message = try await call.access.write { store in
            let now = call.access.nowMillis()
            let attachments = try files.map { file in
                try store.attach(file.bytes, name: file.name, mime: file.mime, in: partition, by: identity, nowMillis: now)
            }
            let op = try store.author(
                .post(text: text, attachments: attachments, location: place, replyTo: nil), in: partition, by: identity, nowMillis: now)
            return try store.views.message(op.id)?.message
        }
        guard let message else { throw WebError.internalError("the message was stored but cannot be read back") }
        return json(ViewJSON.message(message), status: 201)
    }

    static func edit(_ call: Call) async throws -> HTTPReply {
        let body = try call.body
        let text = try body.requiredString("text")
        guard !Text.trimmed(text).isEmpty else { throw WebError.badRequest("text is empty") }
        try checkBytes(text, BodyLimits.textBytes, field: "text")
        let (partition, message) = try await message(call.parameter("message"), call)
        let identity = call.access.identity
        guard message.author == call.access.me else { throw WebError.conflict("you can only edit your own messages") }
        guard !message.deleted else { throw WebError.conflict("the message was deleted; there is nothing to edit") }
        let edited = try await call.access.write { store in
            if message.text != text { try store.author(.edit(target: message.id, text: text), in: partition, by: identity, nowMillis: call.access.nowMillis()) }
            return try store.views.message(message.id)?.message
        }
        return json(ViewJSON.message(edited ?? message))
    }

    static func delete(_ call: Call) async throws -> HTTPReply {
        let (partition, message) = try await message(call.parameter("message"), call)
        let identity = call.access.identity
        guard message.author == call.access.me else { throw WebError.conflict("you can only delete your own messages") }
        if !message.deleted {
            try await call.access.write { store in
                _ = try store.author(.delete(target: message.id), in: partition, by: identity, nowMillis: call.access.nowMillis())
            }
        }
        return noContent
    }

    static func react(_ call: Call) async throws -> HTTPReply {
        let body = try call.body
        let emoji = Text.trimmed(try body.requiredString("emoji"))
        try checkBytes(emoji, BodyLimits.emojiBytes, field: "emoji")
        if let problem = Validation.reactionProblem(emoji) { throw WebError.badRequest("emoji \(problem)") }
        let on = try body.bool("on") ?? true
        let (partition, message) = try await message(call.parameter("message"), call)
        guard !message.deleted else { throw WebError.conflict("the message was deleted; it takes no reactions") }
        let identity = call.access.identity
        let reacted = try await call.access.write { store in
            _ = try store.author(.react(target: message.id, emoji: emoji, on: on), in: partition, by: identity, nowMillis: call.access.nowMillis())
            return try store.views.message(message.id)?.message
        }
        return json(ViewJSON.message(reacted ?? message))
    }

    static func attachment(_ call: Call) async throws -> HTTPReply {
        let (partition, message) = try await message(call.parameter("message"), call)
        // The schema bounds the index by 1...BodyLimits.attachments; past this message's count is 404.
        guard let index = Int(call.parameter("index")), index >= 1, index <= message.attachments.count else {
            throw WebError.notFound("message \(message.id.text) has \(message.attachments.count) attachment(s), counted from 1")
        }
        let attachment = message.attachments[index - 1]
        switch try await call.access.read({ try $0.blobs.attachmentContent(attachment, in: partition) }) {
        case .notFetched: throw WebError.notFound("\(attachment.name) has not reached this node yet")
        case .cannotOpen: throw WebError.conflict("\(attachment.name) is encrypted with a key this node does not hold")
        case .content(let bytes): return content(bytes, mime: attachment.mime, name: attachment.name)
        }
    }

    static func markRead(_ call: Call) async throws -> HTTPReply {
        let partition = try await partition(call.parameter("partition"), call)
        let identity = call.access.identity
        try await call.access.write { store in
            guard let newest = try store.views.newestMessageHLC(partition) else { return }
            if let marker = try store.views.readMarker(owner: call.access.me, partition: partition), marker >= newest { return }
            let ownData = PartitionDescriptor.ownData(owner: call.access.me)
            _ = try store.log.ensurePartition(ownData, joined: true)
            _ = try store.author(.readMarker(partition: partition, position: newest), in: ownData.id, by: identity, nowMillis: call.access.nowMillis())
        }
        return noContent
    }

    /// Mutes or unmutes a chat for this user (`OperationBody.chatMute`, in their own partition).
    static func mute(_ call: Call) async throws -> HTTPReply {
        guard let muted = try call.body.bool("muted") else { throw WebError.badRequest("muted is missing: send {\"muted\": true} or false") }
        let partition = try await partition(call.parameter("partition"), call)
        let identity = call.access.identity
        try await call.access.write { store in
            guard try store.views.isMuted(partition, owner: call.access.me) != muted else { return }
            let ownData = PartitionDescriptor.ownData(owner: call.access.me)
            _ = try store.log.ensurePartition(ownData, joined: true)
            _ = try store.author(.chatMute(partition: partition, muted: muted), in: ownData.id, by: identity, nowMillis: call.access.nowMillis())
        }
        return noContent
    }

    static func typing(_ call: Call) async throws -> HTTPReply {
        let partition = try await partition(call.parameter("partition"), call)
        await call.access.typing(in: partition)
        return noContent
    }

    // MARK: Tasks

    static func tasks(_ call: Call) async throws -> HTTPReply {
        let partition = try await partition(call.parameter("partition"), call)
        return json(.array(try await call.access.read { try $0.views.tasks(partition) }.map(ViewJSON.task)))
    }

    static func addTask(_ call: Call) async throws -> HTTPReply {
        let partition = try await partition(call.parameter("partition"), call)
        let body = try call.body
        let title = try taskTitle(body.requiredString("title"))
        let owner = try body.string("owner").map { text throws(WebError) in try userID(text, field: "owner") }
        let identity = call.access.identity
        let task = try await call.access.write { store in
            let op = try store.author(.taskCreate(title: title, owner: owner), in: partition, by: identity, nowMillis: call.access.nowMillis())
            return try store.views.task(op.id)?.task
        }
        guard let task else { throw WebError.internalError("the task was stored but cannot be read back") }
        return json(ViewJSON.task(task), status: 201)
    }

    static func updateTask(_ call: Call) async throws -> HTTPReply {
        let body = try call.body
        let status = try body.string("status").map { text throws(WebError) in
            guard let status = TaskStatus.allCases.first(where: { $0.description == text }) else {
                throw WebError.badRequest("status must be open, in-progress or complete")
            }
            return status
        }
        let title = try body.string("title").map { text throws(WebError) in try taskTitle(text) }
        var owner = FieldChange<UserID>.unchanged
        if body.isNull("owner") {
            owner = .cleared
        } else if let text = try body.string("owner") {
            owner = .set(try userID(text, field: "owner"))
        }
        guard status != nil || title != nil || body.has("owner") else {
            throw WebError.badRequest("nothing to change: give status, title or owner")
        }
        let (partition, task) = try await task(call.parameter("task"), call)
        let identity = call.access.identity
        let change = owner
        let updated = try await call.access.write { store in
            _ = try store.author(
                .taskUpdate(target: task.id, title: title, status: status, owner: change), in: partition, by: identity, nowMillis: call.access.nowMillis())
            return try store.views.task(task.id)?.task
        }
        return json(ViewJSON.task(updated ?? task))
    }

    static func deleteTask(_ call: Call) async throws -> HTTPReply {
        let (partition, task) = try await task(call.parameter("task"), call)
        let identity = call.access.identity
        try await call.access.write { store in
            _ = try store.author(.taskDelete(target: task.id), in: partition, by: identity, nowMillis: call.access.nowMillis())
        }
        return noContent
    }

    private static func taskTitle(_ text: String) throws(WebError) -> String {
        let title = Text.trimmed(text)
        guard !title.isEmpty else { throw .badRequest("title is empty") }
        try checkBytes(title, BodyLimits.textBytes, field: "title")
        return title
    }
}
