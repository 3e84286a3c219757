import Foundation
import Testing

/// Private rooms through the JSON API (issue 40): `POST /api/rooms` with a passphrase joins the
/// private room it protects, which is then listed, written and read like a room; every answer
/// is checked against the node's OpenAPI document.
@Suite struct PrivateRoomAPITests {
    @Test func postRoomsWithAPassphrase_joinsThePrivateRoom_andItsMessagesStayApart() async throws {
        let (directory, node) = try await APITests.startNode("private-room")
        defer {
            node.kill()
            directory.remove()
        }
        let api = try APIClient(node: node)
        let joined =
            try api.call("POST", "/api/rooms", json: ["name": "#Ops", "passphrase": "correct horse battery staple"], expect: 201).object ?? [:]
        #expect(joined["name"] as? String == "ops" && joined["private"] as? Bool == true)
        let partition = try #require(joined["partition"] as? String)
        try api.call("POST", "/api/rooms", json: ["name": "ops", "passphrase": "short"], expect: 400)
        try api.call("POST", "/api/rooms", json: ["name": "ops", "passphrase": 12345678], expect: 400)
        let rooms = try api.call("GET", "/api/rooms", expect: 200).array ?? []
        #expect(rooms.contains { $0["partition"] as? String == partition && $0["private"] as? Bool == true && $0["name"] as? String == "ops" })
        #expect(rooms.contains { $0["name"] as? String == "lobby" && $0["private"] as? Bool == false })

        // By name (the private room comes first) or by partition id.
        try api.call("POST", "/api/partitions/{partition}/messages", ["partition": "ops"], json: ["text": "north door at ten"], expect: 201)
        let history = try api.call("GET", "/api/partitions/{partition}/messages", ["partition": partition], expect: 200).array ?? []
        #expect(history.compactMap { $0["text"] as? String } == ["north door at ten"])
        // The public room of that name is another room.
        try api.call("POST", "/api/rooms", json: ["name": "ops"], expect: 201)
        try api.call("DELETE", "/api/rooms/{room}", ["room": "ops"], expect: 204)  // the private one first
        let publicOps = try api.call("GET", "/api/partitions/{partition}/messages", ["partition": "ops"], expect: 200).array ?? []
        #expect(publicOps.isEmpty)
        try api.call("GET", "/api/partitions/{partition}/messages", ["partition": partition], expect: 404)
    }
}
