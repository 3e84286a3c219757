import Foundation
import Identity
import JSONViews
import NodeRuntime
import Presentation
import Replica
import Store

extension API {
    // MARK: Rooms

    static func rooms(_ call: Call) async throws -> HTTPReply {
        let me = call.access.me
        let rooms = try await call.access.read { try $0.joinedRooms(reader: me) }
        return json(.array(rooms.map(ViewJSON.room)))
    }

    /// The room directory (`parley rooms --all`): the node's joined rooms and its linked peers' lists.
    static func directory(_ call: Call) async throws -> HTTPReply {
        let rooms = try await call.access.node.roomDirectory()
        return json(.array(rooms.map { ViewJSON.directoryRoom(name: $0.name, topic: $0.topic, people: $0.people, joined: $0.joined) }))
    }

    static func join(_ call: Call) async throws -> HTTPReply {
        let text = try call.body.requiredString("name")
        // The schema has checked the characters; what is left is the byte limit of the folded name.
        guard let room = RoomName(text) else {
            throw WebError.fieldTooLong("name: \(RoomName.problem(with: text) ?? "it is not a room name"); shorten it")
        }
        let me = call.access.me
        if let passphrase = try call.body.string("passphrase") {
            // The schema takes 8 to 1,024 characters, so at least 8 bytes; the byte limit is 413.
            try checkBytes(passphrase, PrivateRoomKeys.maxPassphraseBytes, field: "passphrase")
            if let problem = PrivateRoomKeys.problem(withPassphrase: Array(passphrase.utf8)) {
                throw WebError.badRequest("the room passphrase is not usable: \(problem)")
            }
            // Argon2id takes a third of a second and 64 MiB: done here, not on the node's thread.
            let keys = try PrivateRoomKeys.derive(name: room, passphrase: Array(passphrase.utf8))
            let (id, unread) = try await call.access.write { store in
                let record = try store.joinPrivateRoom(keys)
                return (record.id, try store.views.unreadCount(record.id, reader: me))
            }
            call.access.hub.publish(.partitions)
            return json(ViewJSON.room(name: room, id: id, unread: unread, isPrivate: true), status: 201)
        }
        let (id, unread, policy) = try await call.access.write { store in
            let record = try store.log.ensurePartition(.room(room), joined: true)
            if !record.joined { try store.log.setJoined(record.id, true) }
            return (record.id, try store.views.unreadCount(record.id, reader: me), try store.views.roomPolicy(record.id))
        }
        call.access.hub.publish(.partitions)
        return json(ViewJSON.room(name: room, id: id, unread: unread, policy: policy), status: 201)
    }

    static func leave(_ call: Call) async throws -> HTTPReply {
        let text = call.parameter("room")
        guard let room = RoomName(text) else {
            throw WebError.notFound("no room \(text.prefix(80)) here: \(RoomName.problem(with: text) ?? "not a room name")")
        }
        let id = try await call.access.read { try $0.privateRoom(named: room)?.id } ?? PartitionDescriptor.room(room).id
        guard try await call.access.read({ try $0.log.partition(id)?.joined ?? false }) else { throw WebError.notFound("you are not in \(room)") }
        try await call.access.write { try $0.log.setJoined(id, false) }
        call.access.hub.publish(.partitions)
        return noContent
    }

    // MARK: Conversations

    static func conversations(_ call: Call) async throws -> HTTPReply {
        let me = call.access.me
        return json(.array(try await call.access.read { try $0.views.conversations(reader: me) }.map(ViewJSON.conversation)))
    }

    static func summary(_ id: PartitionID, _ call: Call) async throws -> JSON {
        let me = call.access.me
        let found = try await call.access.read { try $0.views.conversations(reader: me).first { $0.id == id } }
        guard let found else { throw WebError.notFound("conversation \(id.text) is not among yours") }
        return ViewJSON.conversation(found)
    }

    static func createConversation(_ call: Call) async throws -> HTTPReply {
        let body = try call.body
        let name = try conversationName(body.requiredString("name"))
        let list = try body.strings("members") ?? []
        var members: [UserID] = []
        for text in list { members.append(try userID(text, field: "members")) }
        let identity = call.access.identity
        let invited = members
        let descriptor = try await call.access.write { store in
            try store.createConversation(name: name, members: invited, by: identity, nowMillis: call.access.nowMillis())
        }
        call.access.hub.publish(.partitions)
        return json(try await summary(descriptor.id, call), status: 201)
    }

    /// The conversation a path names; 404 unless this user is or was in it.
    static func conversation(_ call: Call) async throws -> (id: PartitionID, creator: UserID, members: Membership.State) {
        let text = call.parameter("conversation")
        guard let id = parsed(text, as: PartitionID.self) else { throw WebError.badRequest("'\(text.prefix(80))' is not a conversation id") }
        let me = call.access.me
        return try await call.access.read { store in
            guard let record = try store.log.partition(id), case .conversation(let creator, _) = record.descriptor,
                let details = try store.views.conversation(id), details.members.everMember.contains(me)
            else { throw WebError.notFound("no conversation \(id.text) of yours here") }
            return (id, creator, details.members)
        }
    }

    static func renameConversation(_ call: Call) async throws -> HTTPReply {
        let name = try conversationName(call.body.requiredString("name"))
        let conversation = try await conversation(call)
        let identity = call.access.identity
        try await call.access.write { store in
            _ = try store.author(.conversationRename(name: name), in: conversation.id, by: identity, nowMillis: call.access.nowMillis())
        }
        return json(try await summary(conversation.id, call))
    }

    static func addMember(_ call: Call) async throws -> HTTPReply {
        let user = try userID(call.body.requiredString("user"), field: "user")
        let conversation = try await conversation(call)
        let identity = call.access.identity
        guard conversation.members.current.contains(call.access.me) else { throw WebError.conflict("you are no longer a member") }
        if !conversation.members.current.contains(user) {
            try await call.access.write { store in
                _ = try store.author(.memberAdd(user), in: conversation.id, by: identity, nowMillis: call.access.nowMillis())
            }
        }
        return json(try await summary(conversation.id, call))
    }

    static func removeMember(_ call: Call) async throws -> HTTPReply {
        let user = try userID(call.parameter("user"), field: "user", inPath: true)
        let conversation = try await conversation(call)
        let identity = call.access.identity
        guard conversation.creator == call.access.me || conversation.creator == identity.id else {
            throw WebError.conflict("only the conversation's creator can remove members")
        }
        guard user != call.access.me else { throw WebError.conflict("to leave a conversation, POST its /leave") }
        guard conversation.members.current.contains(user) else { throw WebError.notFound("that person is not a member") }
        try await call.access.write { store in
            _ = try store.author(.memberRemove(user), in: conversation.id, by: identity, nowMillis: call.access.nowMillis())
        }
        return json(try await summary(conversation.id, call))
    }

    static func leaveConversation(_ call: Call) async throws -> HTTPReply {
        let conversation = try await conversation(call)
        let identity = call.access.identity
        guard conversation.members.current.contains(call.access.me) else { throw WebError.conflict("you are no longer a member") }
        try await call.access.write { store in
            _ = try store.author(.memberLeave, in: conversation.id, by: identity, nowMillis: call.access.nowMillis())
            try store.log.setJoined(conversation.id, false)
        }
        call.access.hub.publish(.partitions)
        return noContent
    }

    private static func conversationName(_ text: String) throws(WebError) -> String {
        let name = Text.trimmed(text)
        guard !name.isEmpty else { throw .badRequest("name is empty") }
        try checkBytes(name, BodyLimits.nameBytes, field: "name")
        return name
    }

    // MARK: People and profile

    static func people(_ call: Call) async throws -> HTTPReply {
        let me = call.access.me
        let search = call.request.query["search"].map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.flatMap { $0.isEmpty ? nil : $0 }
        let live = await call.access.livePresence()
        return json(.array(try await call.access.read { try $0.directory.people(me: me, search: search, live: live) }.map(ViewJSON.person)))
    }

    static func avatar(_ call: Call) async throws -> HTTPReply {
        let user = try userID(call.parameter("user"), field: "user", inPath: true)
        let found = try await call.access.read { store -> (Attachment, [UInt8]?)? in
            guard let avatar = try store.directory.profile(user)?.avatar else { return nil }
            return (avatar, try store.blobs.blob(avatar.hash))
        }
        guard let (avatar, bytes) = found else { throw WebError.notFound("that person has no avatar") }
        guard let bytes else { throw WebError.notFound("the avatar has not reached this node yet") }
        return content(bytes, mime: avatar.mime, name: avatar.name)
    }

    static func profile(_ call: Call) async throws -> HTTPReply {
        let me = call.access.me
        return json(ViewJSON.profile(me, try await call.access.read { try $0.directory.profile(me) }))
    }

    static func updateProfile(_ call: Call) async throws -> HTTPReply {
        let body = try call.body
        let nick = try body.string("nick").map { text throws(WebError) in
            let nick = Text.trimmed(text)
            if let problem = Validation.nicknameProblem(nick) { throw WebError.badRequest("the nickname \(problem)") }
            return nick
        }
        let displayName = try body.string("display_name").map(Text.trimmed)
        let status = try body.string("status").map(Text.trimmed)
        if let displayName { try checkBytes(displayName, BodyLimits.nameBytes, field: "display_name") }
        if let status { try checkBytes(status, BodyLimits.statusBytes, field: "status") }
        let presence = try body.string("presence").map { text throws(WebError) in
            guard let mode = PresenceMode.allCases.first(where: { $0.description == text }) else {
                throw WebError.badRequest("presence must be online, away or hidden")
            }
            return mode
        }
        guard nick != nil || displayName != nil || status != nil || presence != nil else {
            throw WebError.badRequest("nothing to change: give nick, display_name, status or presence")
        }
        return try await writeProfile(call, nick: nick, displayName: displayName, status: status, presence: presence, avatar: nil)
    }

    static func uploadAvatar(_ call: Call) async throws -> HTTPReply {
        let body = try call.body
        let file = try file(body.object, field: "avatar")
        guard file.mime.hasPrefix("image/") else { throw WebError.badRequest("an avatar must be an image (mime image/...)") }
        return try await writeProfile(call, nick: nil, displayName: nil, status: nil, presence: nil, avatar: file)
    }

    private static func writeProfile(
        _ call: Call, nick: String?, displayName: String?, status: String?, presence: PresenceMode?, avatar file: File?
    ) async throws -> HTTPReply {
        let identity = call.access.identity
        let profile = try await call.access.write { store in
            let now = call.access.nowMillis()
            let avatar = try file.map { file in
                Attachment(name: file.name, size: UInt64(file.bytes.count), mime: file.mime, hash: try store.blobs.storeBlob(file.bytes, nowMillis: now))
            }
            _ = try store.author(
                .profile(subject: call.access.me, nick: nick, displayName: displayName, status: status, presence: presence, avatar: avatar),
                in: PartitionDescriptor.directory.id, by: identity, nowMillis: now)
            return try store.directory.profile(call.access.me)
        }
        call.access.hub.publish(.presence)
        return json(ViewJSON.profile(call.access.me, profile))
    }

    // MARK: The node

    static func me(_ call: Call) async throws -> HTTPReply {
        let me = call.access.me
        let profile = try await call.access.read { try $0.directory.profile(me) }
        guard case .object(var fields) = ViewJSON.profile(me, profile) else { return json(.null) }
        fields["short"] = .string(me.short)
        fields["web"] = .string(call.web.url)
        return json(.object(fields))
    }

    static func peers(_ call: Call) async throws -> HTTPReply {
        json(.array(await call.access.node.peers().map(ViewJSON.peer)))
    }

    static func status(_ call: Call) async throws -> HTTPReply {
        json(ViewJSON.status(await call.access.node.status(), extra: ["web": .string(call.web.url)]))
    }

    static func digest(_ call: Call) async throws -> HTTPReply {
        json(.array(try await call.access.read { try ViewJSON.digestRows($0) }.map(ViewJSON.digest)))
    }

    static func doctor(_ call: Call) async throws -> HTTPReply {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = try encoder.encode(await call.access.node.doctor())
        return .response(HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: Array(body)))
    }

    // MARK: Archives

    /// `GET /api/export[?partition=]`: what `parley export --out FILE [--room | --conversation]`
    /// writes, as a download.
    static func export(_ call: Call) async throws -> HTTPReply {
        var partitions: [PartitionID]?
        if let text = call.request.query["partition"] {
            let id = try await partition(text, call)
            partitions = try await call.access.read { store in
                switch try store.log.partition(id)?.descriptor {
                case .conversation: try store.views.exportSet(forConversation: id)
                default: [id, PartitionDescriptor.directory.id]
                }
            }
        }
        let chosen = partitions
        let bytes = try await call.access.read { store in
            var bytes: [UInt8] = []
            let writer = try OpArchive.Writer { bytes += $0 }
            try OpArchiver(store).export(chosen, to: writer, nowMillis: call.access.nowMillis())
            return bytes
        }
        return content(bytes, mime: "application/octet-stream", name: "parley-export.parley")
    }

    /// `POST /api/import`: applies an archive as `parley import FILE` does (verified like ops from
    /// a peer; invites in it join their conversations), and pushes what is new to peers.
    static func importArchive(_ call: Call) async throws -> HTTPReply {
        let body = try call.body
        guard let object = body.object["archive"] as? [String: Any] else { throw WebError.badRequest("archive must be a file object {name, data}") }
        // A file that is not an archive is as its schema says, yet cannot be applied: 422.
        let bytes = try file(object, field: "archive").bytes
        let identity = call.access.identity
        let summary = try await call.access.write { store in
            var offset = 0
            let reader: OpArchive.Reader
            do {
                reader = try OpArchive.Reader { count in
                    let end = min(bytes.count, offset + count)
                    defer { offset = end }
                    return Array(bytes[offset..<end])
                }
            } catch {
                throw WebError.unprocessable("archive is not a `parley export` file: \(error)")
            }
            let summary = try OpArchiver(store).importArchive(reader, me: call.access.me, nowMillis: call.access.nowMillis())
            _ = try store.processInbox(me: identity)
            return summary
        }
        return json(ViewJSON.importSummary(summary))
    }

    static func events(_ call: Call) async throws -> HTTPReply {
        .stream(call.access.hub.subscribe())
    }

    /// `POST /api/wipe` with `{"confirm": "wipe"}`: the keys are destroyed before the answer;
    /// the files go and the node stops right after it.
    static func wipe(_ call: Call) async throws -> HTTPReply {
        let body = try call.body
        guard try body.string("confirm") == "wipe" else {
            throw WebError.badRequest("a wipe destroys this node's identity and data for good; confirm with {\"confirm\": \"wipe\"}")
        }
        await call.access.wipe()
        return json(.object(["wiped": .bool(true)]))
    }
}
