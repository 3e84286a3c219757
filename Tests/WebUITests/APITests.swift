import Foundation
import TestSupport
import Testing

/// Calls the API of one node with its token and checks every answer against the node's OpenAPI
/// document.
final class APIClient: Sendable {
    let node: WebNode
    let checker: OpenAPIChecker

    init(node: WebNode, sourceLocation: SourceLocation = #_sourceLocation) throws {
        self.node = node
        let response = try node.client.send("GET", "/api/openapi.json")
        let document = try #require(response.object, "no OpenAPI document: \(response)", sourceLocation: sourceLocation)
        checker = OpenAPIChecker(document: document)
    }

    /// `method template` with `{name}` replaced from `parameters`; the answer must conform.
    @discardableResult
    func call(
        _ method: String, _ template: String, _ parameters: [String: String] = [:], query: String = "", json: Any? = nil,
        raw: [UInt8]? = nil, expect status: Int? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> HTTPTestClient.Response {
        var path = template
        for (name, value) in parameters { path = path.replacingOccurrences(of: "{\(name)}", with: value) }
        var headers = node.bearer
        var body: [UInt8] = raw ?? []
        if raw != nil { headers["Content-Type"] = "application/json" }
        if let json {
            body = Array(try JSONSerialization.data(withJSONObject: json))
            headers["Content-Type"] = "application/json"
        }
        let response = try node.client.send(method, path + query, headers: headers, body: body)
        for problem in checker.check(response, method, template) { Issue.record(Comment(rawValue: problem), sourceLocation: sourceLocation) }
        if let status {
            #expect(response.status == status, "\(method) \(path): \(response)", sourceLocation: sourceLocation)
        }
        if response.status >= 400 {
            #expect(response.errorMessage?.isEmpty == false, "\(method) \(path): an error without a message: \(response)", sourceLocation: sourceLocation)
        }
        return response
    }
}

/// The JSON API against a real `parley run`: every endpoint's success and error cases, the
/// OpenAPI document against what the server does, auth, Host/Origin, limits, events.
@Suite struct APITests {
    static func startNode(_ label: String, nick: String? = "alice", before: (WebNode) async throws -> Void = { _ in }) async throws -> (TestDirectory, WebNode)
    {
        let directory = TestDirectory(label)
        let node = WebNode(name: "node", in: directory)
        try await node.create(nick: nick)
        try await before(node)
        try await node.start()
        return (directory, node)
    }

    /// Another identity (not running): a user id to add to conversations.
    static func otherUser(_ directory: TestDirectory, _ name: String) async throws -> String {
        let other = WebNode(name: name, in: directory)
        try await other.create(nick: name)
        return other.id
    }

    /// Documented statuses this test cannot provoke, and why.
    static let unreachable: [String: Set<Int>] = [
        // 409: the attachment's blob is here but no held key opens it; needs a forged conversation.
        "GET /api/messages/{message}/attachments/{index}": [409]
    ]

    @Test func everyEndpoint_answersAsDocumented_inSuccessAndError() async throws {
        // Bob's message in #lobby reaches alice's node through an export file, so alice has
        // someone else's message to (fail to) edit and delete.
        var bob = ""
        let (directory, node) = try await Self.startNode("endpoints") { alice in
            let other = WebNode(name: "bob", in: alice.directory)
            try await other.create(nick: "bob")
            bob = other.id
            let file = alice.directory.path + "/lobby.parley"
            for step in [["send", "--room", "lobby", "hi from bob"], ["export", "--out", file, "--room", "lobby"]] {
                let result = await other.parley(step)
                try #require(result.exitCode == 0, "\(result)")
            }
            let imported = await alice.parley(["import", file])
            try #require(imported.exitCode == 0, "\(imported)")
            // A second device of alice's, to list and revoke.
            let paired = try await DevicePairingRun.pair(
                first: alice.dataDir, new: alice.directory.path + "/laptop", name: "laptop", byAddress: true,
                environment: ["HOME": alice.directory.path], captureIn: alice.directory.path)
            try #require(paired.guest.exitCode == 0 && paired.host.exitCode == 0, "\(paired.guest)\n\(paired.host)")
        }
        defer {
            node.kill()
            directory.remove()
        }
        let carol = try await Self.otherUser(directory, "carol")
        let api = try APIClient(node: node)
        let missing = String(repeating: "a", count: 52)

        // Who am I; rooms.
        let me = try api.call("GET", "/api/me", expect: 200).object ?? [:]
        #expect(me["id"] as? String == node.id && me["nick"] as? String == "alice")
        let rooms = try api.call("GET", "/api/rooms", expect: 200).array ?? []
        #expect(rooms.map { $0["name"] as? String } == ["lobby"])
        let dev = try api.call("POST", "/api/rooms", json: ["name": "#Dev"], expect: 201).object ?? [:]
        #expect(dev["name"] as? String == "dev")
        try api.call("POST", "/api/rooms", json: ["name": "no spaces allowed"], expect: 400)
        try api.call("POST", "/api/rooms", json: ["title": "dev"], expect: 400)
        // The room directory: this node alone lists the rooms it joined, with their policy fields.
        let roomDirectory = try api.call("GET", "/api/directory", expect: 200).array ?? []
        #expect(roomDirectory.contains { $0["name"] as? String == "dev" && $0["joined"] as? Bool == true }, "\(roomDirectory)")
        try api.call("DELETE", "/api/rooms/{room}", ["room": "dev"], expect: 204)
        try api.call("DELETE", "/api/rooms/{room}", ["room": "dev"], expect: 404)
        try api.call("DELETE", "/api/rooms/{room}", ["room": "a%23b"], expect: 400)
        // Limits in UTF-8 bytes, which a schema's maxLength (characters) cannot state: 413 naming
        // the field; in a path, a name too long to be a room's names nothing (404).
        let longName = String(repeating: "é", count: 40)
        let tooLong = try api.call("POST", "/api/rooms", json: ["name": longName], expect: 413)
        #expect(tooLong.errorMessage?.contains("name") == true, "\(tooLong)")
        let longPath = try #require(longName.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        try api.call("DELETE", "/api/rooms/{room}", ["room": longPath], expect: 404)
        try api.call("GET", "/api/partitions/{partition}/messages", ["partition": longPath], expect: 404)

        // Messages in #lobby (by name or by partition id).
        let lobby = try #require(rooms.first?["partition"] as? String)
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 13, 10, 26, 10] + Array(repeating: 7, count: 100)
        let posted =
            try api.call(
                "POST", "/api/partitions/{partition}/messages", ["partition": "lobby"],
                json: [
                    "text": "hello, web", "location": ["lat": 52.52, "lon": 13.405],
                    "attachments": [["name": "map.png", "mime": "image/png", "data": Data(png).base64EncodedString()]],
                ], expect: 201
            ).object ?? [:]
        let messageID = try #require(posted["id"] as? String)
        #expect((posted["attachments"] as? [[String: Any]])?.first?["name"] as? String == "map.png")
        try api.call("POST", "/api/partitions/{partition}/messages", ["partition": lobby], json: ["text": "  "], expect: 400)
        try api.call("POST", "/api/partitions/{partition}/messages", ["partition": lobby], json: ["text": 42], expect: 400)
        try api.call(
            "POST", "/api/partitions/{partition}/messages", ["partition": lobby], json: ["text": "x", "location": ["lat": 91, "lon": 0]], expect: 400)
        try api.call(
            "POST", "/api/partitions/{partition}/messages", ["partition": lobby],
            json: ["attachments": [["name": "x.bin", "data": "not base64!"]]], expect: 400)
        try api.call("POST", "/api/partitions/{partition}/messages", ["partition": "dev"], json: ["text": "not joined"], expect: 404)
        try api.call("POST", "/api/partitions/{partition}/messages", ["partition": missing], json: ["text": "nowhere"], expect: 404)
        let history = try api.call("GET", "/api/partitions/{partition}/messages", ["partition": lobby], query: "?limit=10", expect: 200).array ?? []
        #expect(history.last?["text"] as? String == "hello, web")
        let bobsMessage = try #require(history.first { $0["author"] as? String == bob }?["id"] as? String, "bob's imported message")
        try api.call("PATCH", "/api/messages/{message}", ["message": bobsMessage], json: ["text": "not mine"], expect: 409)
        try api.call("DELETE", "/api/messages/{message}", ["message": bobsMessage], expect: 409)
        try api.call("DELETE", "/api/messages/{message}", ["message": missing], expect: 404)
        try api.call("POST", "/api/messages/{message}/reactions", ["message": missing], json: ["emoji": "👍"], expect: 404)
        try api.call("POST", "/api/partitions/{partition}/read", ["partition": "a%23b"], expect: 400)
        try api.call("POST", "/api/partitions/{partition}/typing", ["partition": "a%23b"], expect: 400)
        try api.call("GET", "/api/partitions/{partition}/tasks", ["partition": "a%23b"], expect: 400)
        // 8 MiB and one byte, once decoded: over the attachment limit.
        let huge = Data(count: (8 << 20) + 1).base64EncodedString()
        try api.call(
            "POST", "/api/partitions/{partition}/messages", ["partition": lobby],
            json: ["attachments": [["name": "big.bin", "data": huge]]], expect: 413)
        try api.call("PUT", "/api/profile/avatar", json: ["name": "big.png", "mime": "image/png", "data": huge], expect: 413)
        try api.call("GET", "/api/partitions/{partition}/messages", ["partition": lobby], query: "?limit=0", expect: 400)
        // A page holds at most 1,000 messages; older ones come page by page, before the oldest shown.
        try api.call("GET", "/api/partitions/{partition}/messages", ["partition": lobby], query: "?limit=1001", expect: 400)
        let newest = try api.call("GET", "/api/partitions/{partition}/messages", ["partition": lobby], query: "?limit=1", expect: 200).array ?? []
        let newestID = try #require(newest.first?["id"] as? String)
        let older =
            try api.call(
                "GET", "/api/partitions/{partition}/messages", ["partition": lobby], query: "?limit=10&before=\(newestID)", expect: 200
            ).array ?? []
        #expect(older.suffix(history.count - 1).compactMap { $0["id"] as? String } == history.dropLast().compactMap { $0["id"] as? String })
        try api.call("GET", "/api/partitions/{partition}/messages", ["partition": lobby], query: "?before=nonsense", expect: 400)
        try api.call("GET", "/api/partitions/{partition}/messages", ["partition": lobby], query: "?before=\(missing)", expect: 404)
        // Newer ones page by page after the newest shown, the oldest first; none after the newest.
        let oldestID = try #require(history.first?["id"] as? String)
        let newer =
            try api.call(
                "GET", "/api/partitions/{partition}/messages", ["partition": lobby], query: "?limit=1&after=\(oldestID)", expect: 200
            ).array ?? []
        #expect(newer.compactMap { $0["id"] as? String } == history.dropFirst().prefix(1).compactMap { $0["id"] as? String })
        let none = try api.call("GET", "/api/partitions/{partition}/messages", ["partition": lobby], query: "?after=\(newestID)", expect: 200)
        #expect(none.array?.isEmpty == true)
        try api.call("GET", "/api/partitions/{partition}/messages", ["partition": lobby], query: "?after=\(missing)", expect: 404)
        let both = try api.call(
            "GET", "/api/partitions/{partition}/messages", ["partition": lobby], query: "?before=\(newestID)&after=\(oldestID)", expect: 400)
        #expect(both.errorMessage?.contains("not both") == true, "\(both.errorMessage ?? "")")
        try api.call("GET", "/api/partitions/{partition}/messages", ["partition": lobby], query: "?before=\(newestID)&after=\(missing)", expect: 404)
        try api.call("GET", "/api/partitions/{partition}/messages", ["partition": "bad/name"], expect: 404)

        let attachment = try api.call(
            "GET", "/api/messages/{message}/attachments/{index}", ["message": messageID, "index": "1"], expect: 200)
        #expect(attachment.body == png && attachment.headers["content-type"] == "image/png")
        try api.call("GET", "/api/messages/{message}/attachments/{index}", ["message": messageID, "index": "2"], expect: 404)
        try api.call("GET", "/api/messages/{message}/attachments/{index}", ["message": "zz", "index": "1"], expect: 400)

        let edited = try api.call("PATCH", "/api/messages/{message}", ["message": messageID], json: ["text": "hello, world"], expect: 200)
        #expect(edited.object?["text"] as? String == "hello, world" && edited.object?["edited"] as? Bool == true)
        try api.call("PATCH", "/api/messages/{message}", ["message": messageID], json: [:], expect: 400)
        try api.call("PATCH", "/api/messages/{message}", ["message": missing], json: ["text": "x"], expect: 404)
        let reacted = try api.call("POST", "/api/messages/{message}/reactions", ["message": messageID], json: ["emoji": "👍"], expect: 200)
        #expect((reacted.object?["reactions"] as? [String: [String]])?["👍"] == [node.id])
        try api.call("POST", "/api/messages/{message}/reactions", ["message": messageID], json: ["emoji": "two words"], expect: 400)
        try api.call("POST", "/api/messages/{message}/reactions", ["message": messageID], json: ["emoji": String(repeating: "👍", count: 9)], expect: 413)
        try api.call("POST", "/api/messages/{message}/reactions", ["message": messageID], json: ["emoji": "👍", "on": "yes"], expect: 400)
        try api.call("POST", "/api/partitions/{partition}/read", ["partition": lobby], expect: 204)
        try api.call("POST", "/api/partitions/{partition}/read", ["partition": missing], expect: 404)
        try api.call("PUT", "/api/partitions/{partition}/mute", ["partition": lobby], json: ["muted": true], expect: 204)
        let mutedRooms = try api.call("GET", "/api/rooms", expect: 200).array ?? []
        #expect(mutedRooms.contains { $0["partition"] as? String == lobby && $0["muted"] as? Bool == true })
        try api.call("PUT", "/api/partitions/{partition}/mute", ["partition": lobby], json: ["muted": false], expect: 204)
        #expect(try api.call("GET", "/api/rooms", expect: 200).array?.allSatisfy { $0["muted"] as? Bool == false } == true)
        try api.call("PUT", "/api/partitions/{partition}/mute", ["partition": lobby], json: ["muted": "yes"], expect: 400)
        try api.call("PUT", "/api/partitions/{partition}/mute", ["partition": lobby], json: [:], expect: 400)
        try api.call("PUT", "/api/partitions/{partition}/mute", ["partition": missing], json: ["muted": true], expect: 404)
        try api.call("POST", "/api/partitions/{partition}/typing", ["partition": lobby], expect: 204)
        try api.call("POST", "/api/partitions/{partition}/typing", ["partition": missing], expect: 404)
        try api.call("DELETE", "/api/messages/{message}", ["message": messageID], expect: 204)
        try api.call("PATCH", "/api/messages/{message}", ["message": messageID], json: ["text": "too late"], expect: 409)
        try api.call("POST", "/api/messages/{message}/reactions", ["message": messageID], json: ["emoji": "👍"], expect: 409)
        try api.call("DELETE", "/api/messages/{message}", ["message": "short"], expect: 400)

        // Tasks.
        let task = try api.call("POST", "/api/partitions/{partition}/tasks", ["partition": lobby], json: ["title": "book the room"], expect: 201).object ?? [:]
        let taskID = try #require(task["id"] as? String)
        #expect(task["status"] as? String == "open")
        try api.call("POST", "/api/partitions/{partition}/tasks", ["partition": lobby], json: ["title": ""], expect: 400)
        try api.call("POST", "/api/partitions/{partition}/tasks", ["partition": lobby], json: ["title": "x", "owner": "nobody"], expect: 400)
        try api.call("POST", "/api/partitions/{partition}/tasks", ["partition": lobby], json: ["title": "x", "owner": missing], expect: 422)
        try api.call("POST", "/api/partitions/{partition}/tasks", ["partition": missing], json: ["title": "x"], expect: 404)
        let moved = try api.call("PATCH", "/api/tasks/{task}", ["task": taskID], json: ["status": "complete", "owner": node.id], expect: 200)
        #expect(moved.object?["status"] as? String == "complete" && moved.object?["owner"] as? String == node.id)
        let cleared = try api.call("PATCH", "/api/tasks/{task}", ["task": taskID], json: ["owner": NSNull()], expect: 200)
        #expect(cleared.object?["owner"] is NSNull)
        try api.call("PATCH", "/api/tasks/{task}", ["task": taskID], json: ["status": "finished"], expect: 400)
        try api.call("PATCH", "/api/tasks/{task}", ["task": taskID], json: ["owner": missing], expect: 422)
        try api.call("PATCH", "/api/tasks/{task}", ["task": taskID], json: [:], expect: 400)
        try api.call("PATCH", "/api/tasks/{task}", ["task": missing], json: ["status": "open"], expect: 404)
        let tasks = try api.call("GET", "/api/partitions/{partition}/tasks", ["partition": lobby], expect: 200).array ?? []
        #expect(tasks.map { $0["status"] as? String } == ["complete"])
        try api.call("GET", "/api/partitions/{partition}/tasks", ["partition": missing], expect: 404)
        try api.call("DELETE", "/api/tasks/{task}", ["task": taskID], expect: 204)
        try api.call("DELETE", "/api/tasks/{task}", ["task": taskID], expect: 404)
        try api.call("DELETE", "/api/tasks/{task}", ["task": "x"], expect: 400)

        // Conversations.
        let created = try api.call("POST", "/api/conversations", json: ["name": "lab night", "members": [bob]], expect: 201).object ?? [:]
        let conversation = try #require(created["id"] as? String)
        let initialMembers = created["members"] as? [String] ?? []
        #expect(Set(initialMembers) == [node.id, bob])
        try api.call("POST", "/api/conversations", json: ["name": "x", "members": []], expect: 400)
        try api.call("POST", "/api/conversations", json: ["name": "", "members": [bob]], expect: 400)
        try api.call("POST", "/api/conversations", json: ["name": "x", "members": ["not-an-id"]], expect: 400)
        // 52 characters of base32 that are not a public key name no one: in a body, 422.
        try api.call("POST", "/api/conversations", json: ["name": "x", "members": [missing]], expect: 422)
        try api.call("POST", "/api/conversations", json: ["name": "x", "members": "bob"], expect: 400)
        let listed = try api.call("GET", "/api/conversations", expect: 200).array ?? []
        #expect(listed.map { $0["name"] as? String } == ["lab night"])
        try api.call("POST", "/api/partitions/{partition}/messages", ["partition": conversation], json: ["text": "secret"], expect: 201)
        let privateTask =
            try api.call(
                "POST", "/api/partitions/{partition}/tasks", ["partition": conversation], json: ["title": "book the van"], expect: 201
            ).object?["id"] as? String
        let renamed = try api.call("PATCH", "/api/conversations/{conversation}", ["conversation": conversation], json: ["name": "lab day"], expect: 200)
        #expect(renamed.object?["name"] as? String == "lab day")
        try api.call("PATCH", "/api/conversations/{conversation}", ["conversation": missing], json: ["name": "x"], expect: 404)
        try api.call("PATCH", "/api/conversations/{conversation}", ["conversation": conversation], json: ["name": 3], expect: 400)
        let added = try api.call("POST", "/api/conversations/{conversation}/members", ["conversation": conversation], json: ["user": carol], expect: 200)
        let membersAfterAdd = added.object?["members"] as? [String] ?? []
        #expect(membersAfterAdd.contains(carol))
        try api.call("POST", "/api/conversations/{conversation}/members", ["conversation": conversation], json: ["user": "x"], expect: 400)
        try api.call("POST", "/api/conversations/{conversation}/members", ["conversation": conversation], json: ["user": missing], expect: 422)
        try api.call("POST", "/api/conversations/{conversation}/members", ["conversation": missing], json: ["user": carol], expect: 404)
        let removed = try api.call(
            "DELETE", "/api/conversations/{conversation}/members/{user}", ["conversation": conversation, "user": carol], expect: 200)
        let membersAfterRemove = removed.object?["members"] as? [String] ?? []
        #expect(!membersAfterRemove.contains(carol))
        try api.call("DELETE", "/api/conversations/{conversation}/members/{user}", ["conversation": conversation, "user": carol], expect: 404)
        try api.call("DELETE", "/api/conversations/{conversation}/members/{user}", ["conversation": conversation, "user": node.id], expect: 409)
        try api.call("DELETE", "/api/conversations/{conversation}/members/{user}", ["conversation": conversation, "user": "x"], expect: 400)
        try api.call("POST", "/api/conversations/{conversation}/leave", ["conversation": conversation], expect: 204)
        try api.call("POST", "/api/conversations/{conversation}/leave", ["conversation": conversation], expect: 409)
        try api.call("POST", "/api/conversations/{conversation}/leave", ["conversation": "x"], expect: 400)
        try api.call("POST", "/api/conversations/{conversation}/leave", ["conversation": missing], expect: 404)
        // A former member still sees the history, and every write is refused.
        try api.call("GET", "/api/partitions/{partition}/messages", ["partition": conversation], expect: 200)
        try api.call("POST", "/api/partitions/{partition}/messages", ["partition": conversation], json: ["text": "still here?"], expect: 409)
        try api.call("POST", "/api/partitions/{partition}/tasks", ["partition": conversation], json: ["title": "x"], expect: 409)
        try api.call("PATCH", "/api/tasks/{task}", ["task": try #require(privateTask)], json: ["status": "complete"], expect: 409)
        try api.call("DELETE", "/api/tasks/{task}", ["task": try #require(privateTask)], expect: 409)
        try api.call("PATCH", "/api/conversations/{conversation}", ["conversation": conversation], json: ["name": "mine"], expect: 409)
        try api.call("POST", "/api/conversations/{conversation}/members", ["conversation": conversation], json: ["user": carol], expect: 409)
        #expect(try api.call("GET", "/api/conversations", expect: 200).array?.isEmpty == true)

        // People and profile.
        let people = try api.call("GET", "/api/people", expect: 200).array ?? []
        #expect(people.contains { $0["id"] as? String == node.id && $0["me"] as? Bool == true })
        #expect(try api.call("GET", "/api/people", query: "?search=zzzz", expect: 200).array?.isEmpty == true)
        let profile =
            try api.call(
                "PATCH", "/api/profile", json: ["display_name": "Alice L.", "status": "in the lab", "presence": "away"], expect: 200
            ).object ?? [:]
        #expect(profile["status"] as? String == "in the lab" && profile["presence"] as? String == "away")
        try api.call("PATCH", "/api/profile", json: ["nick": "has space"], expect: 400)
        try api.call("PATCH", "/api/profile", json: ["presence": "asleep"], expect: 400)
        try api.call("PATCH", "/api/profile", json: [:], expect: 400)
        try api.call("PATCH", "/api/profile", json: ["nick": NSNull()], expect: 400)
        try api.call("PATCH", "/api/profile", json: ["display_name": String(repeating: "é", count: 100)], expect: 413)
        try api.call("GET", "/api/profile", expect: 200)
        try api.call("GET", "/api/people/{user}/avatar", ["user": node.id], expect: 404)
        let avatar = try api.call(
            "PUT", "/api/profile/avatar", json: ["name": "me.png", "mime": "image/png", "data": Data(png).base64EncodedString()], expect: 200)
        #expect((avatar.object?["avatar"] as? [String: Any])?["size"] as? Int == png.count)
        try api.call("PUT", "/api/profile/avatar", json: ["name": "me.txt", "mime": "text/plain", "data": "aGk="], expect: 400)
        let picture = try api.call("GET", "/api/people/{user}/avatar", ["user": node.id], expect: 200)
        #expect(picture.body == png)
        try api.call("GET", "/api/people/{user}/avatar", ["user": "nobody"], expect: 400)
        try api.call("GET", "/api/people/{user}/avatar", ["user": missing], expect: 404)

        // The node.
        #expect(try api.call("GET", "/api/peers", expect: 200).array?.isEmpty == true)
        let status = try api.call("GET", "/api/status", expect: 200).object ?? [:]
        #expect(status["web"] as? String == "http://127.0.0.1:\(node.port)/")
        let digest = try api.call("GET", "/api/digest", expect: 200).array ?? []
        #expect(digest.contains { $0["kind"] as? String == "room" && $0["name"] as? String == "lobby" })
        try api.call("GET", "/api/openapi.json", expect: 200)
        let doctor = try api.call("GET", "/api/doctor", expect: 200).object ?? [:]
        #expect(doctor["sockets"] != nil && doctor["admission"] != nil, "\(doctor)")

        // Archives: export #lobby, import it back (everything already here), refuse garbage.
        let archive = try api.call("GET", "/api/export", query: "?partition=lobby", expect: 200)
        #expect(archive.body.count > 8)
        try api.call("GET", "/api/export", expect: 200)
        try api.call("GET", "/api/export", query: "?partition=a/b", expect: 400)
        try api.call("GET", "/api/export", query: "?partition=nowhere", expect: 404)
        let imported =
            try api.call("POST", "/api/import", json: ["archive": ["name": "lobby.parley", "data": Data(archive.body).base64EncodedString()]], expect: 200)
            .object ?? [:]
        #expect((imported["already_present"] as? Int ?? 0) > 0 && imported["applied"] as? Int == 0, "\(imported)")
        // As the schema says (a file in base64), but not an archive.
        try api.call("POST", "/api/import", json: ["archive": ["name": "x.parley", "data": "aGk="]], expect: 422)
        try api.call("POST", "/api/import", json: ["archive": "x"], expect: 400)
        try api.call(
            "POST", "/api/import", json: ["archive": ["name": "big.parley", "data": Data(count: (8 << 20) + 1).base64EncodedString()]], expect: 413)

        // Devices: the first and the paired laptop; revoking the laptop, a stranger's key, this one.
        let devices = try api.call("GET", "/api/devices", expect: 200).array ?? []
        #expect(devices.count == 2 && devices.contains { $0["this"] as? Bool == true && $0["first"] as? Bool == true }, "\(devices)")
        let laptop = try #require(devices.first { $0["name"] as? String == "laptop" }?["id"] as? String)
        let revoked = try api.call("POST", "/api/devices/{device}/revoke", ["device": laptop], expect: 200).object ?? [:]
        #expect(revoked["revoked"] as? Bool == true)
        try api.call("POST", "/api/devices/{device}/revoke", ["device": bob], expect: 404)
        try api.call("POST", "/api/devices/{device}/revoke", ["device": node.id], expect: 409)
        try api.call("POST", "/api/devices/{device}/revoke", ["device": "not-a-key"], expect: 400)

        // Pairing from the page: a phone pairs with the address the offer shows (this node runs
        // without discovery, so nothing is beaconed); one offer waits at a time, and ending one
        // spends its code.
        try api.call("GET", "/api/devices/pair", expect: 404)
        try api.call("DELETE", "/api/devices/pair", expect: 404)
        try api.call("POST", "/api/devices/pair", json: ["minutes": 0], expect: 400)
        let offer = try api.call("POST", "/api/devices/pair", json: [:], expect: 201).object ?? [:]
        #expect(offer["state"] as? String == "waiting" && (offer["qr_svg"] as? String)?.hasPrefix("<svg") == true, "\(offer)")
        let invitation = try #require(offer["address"] as? String)
        #expect(invitation.hasPrefix("\(offer["code"] as? String ?? "?")@127.0.0.1:") && offer["command"] as? String == "parley init --pair \(invitation)")
        try api.call("POST", "/api/devices/pair", json: [:], expect: 409)
        let binary = try #require(ParleyExecutable.path)
        let phone = await CompletedProcess.run(
            binary, ["--data-dir", directory.path + "/phone", "init", "--pair", invitation, "--name", "phone"],
            environment: ["HOME": directory.path], captureIn: directory.path, timeout: .seconds(60))
        #expect(phone.exitCode == 0, "\(phone)")
        var pairing: [String: Any] = [:]
        let paired = await poll(timeout: .seconds(10)) {
            pairing = (try? api.call("GET", "/api/devices/pair", expect: 200).object) ?? [:]
            return pairing["state"] as? String == "paired"
        }
        #expect(paired && pairing["device_name"] as? String == "phone", "\(pairing)")
        let afterPairing = try api.call("GET", "/api/devices", expect: 200).array ?? []
        #expect(afterPairing.contains { $0["name"] as? String == "phone" && $0["id"] as? String == pairing["device"] as? String }, "\(afterPairing)")
        try api.call("POST", "/api/devices/pair", json: ["minutes": 1], expect: 201)
        try api.call("DELETE", "/api/devices/pair", expect: 204)
        try api.call("DELETE", "/api/devices/pair", expect: 204)  // ended already: nothing to do
        let ended = await poll(timeout: .seconds(10)) {
            pairing = (try? api.call("GET", "/api/devices/pair", expect: 200).object) ?? [:]
            return pairing["state"] as? String == "failed"
        }
        #expect(ended && (pairing["error"] as? String)?.contains("cancelled") == true, "\(pairing)")

        // Last, since it ends the node: the wipe, refused without its confirmation, then done
        // (WipeAPITests checks what it leaves).
        try api.call("POST", "/api/wipe", json: ["confirm": "no"], expect: 400)
        try api.call("POST", "/api/wipe", json: ["confirm": "wipe"], expect: 200)

        // The event stream is an endpoint too (checked in its own test); count it here.
        let missingSuccess = api.checker.operations.subtracting(api.checker.succeeded).subtracting(["GET /api/events"])
        #expect(missingSuccess.isEmpty, "documented operations never exercised with success: \(missingSuccess.sorted())")
        for (operation, statuses) in api.checker.statusesSeen.sorted(by: { $0.key < $1.key }) {
            let documented = Set(
                (api.checker.operation(String(operation.split(separator: " ")[0]), String(operation.split(separator: " ")[1]))?["responses"] as? [String: Any]
                    ?? [:]).keys.compactMap { Int($0) })
            // 401, 403, 415 and a body's 413 come from the gate, checked for every route by GateTests and HeaderGateTests.
            let untested = documented.subtracting(statuses).subtracting([401, 403, 413, 415]).subtracting(Self.unreachable[operation] ?? [])
            #expect(untested.isEmpty, "\(operation): documented statuses never seen: \(untested.sorted())")
        }
    }
}
