import Foundation
import TestSupport
import Testing

/// `/api/events`: a live stream of what changed.
@Suite struct EventTests {
    @Test func aWriteThroughTheAPI_orTheCommandLine_isAnEventOnTheStream() async throws {
        let (directory, node) = try await APITests.startNode("events")
        defer {
            node.kill()
            directory.remove()
        }
        let client = node.client
        var headers = node.bearer
        headers["Content-Type"] = "application/json"
        let text = try client.stream(
            "/api/events", headers: node.bearer,
            during: {
                _ = try client.send("POST", "/api/partitions/lobby/messages", headers: headers, body: Array(#"{"text":"live"}"#.utf8))
            }, until: { $0.contains("event: changed") })
        #expect(text.contains("text/event-stream"), "\(text)")
        #expect(text.contains("event: hello") && text.contains("event: changed"), "\(text)")

        // Another process (the command line) writes the store: the node's page hears of it too.
        // Spawned and waited for without the concurrency pool: this closure runs on a pool thread
        // that the stream's blocking reads hold.
        let binary = try #require(ParleyExecutable.path)
        let fromCLI = try client.stream(
            "/api/events", headers: node.bearer,
            during: {
                let send = try ChildProcess(
                    executable: binary, arguments: ["--data-dir", node.dataDir, "send", "--room", "lobby", "from the command line"],
                    environment: ["HOME": directory.path], captureIn: directory.path, name: "cli-send")
                let deadline = ContinuousClock.now + .seconds(20)
                while send.isRunning && ContinuousClock.now < deadline { usleep(5_000) }
            }, until: { $0.contains("event: changed") })
        #expect(fromCLI.contains("event: changed"), "\(fromCLI)")
    }

    @Test func aStream_withoutTheToken_is401() async throws {
        let (directory, node) = try await APITests.startNode("events-auth")
        defer {
            node.kill()
            directory.remove()
        }
        let response = try node.client.send("GET", "/api/events")
        #expect(response.status == 401)
    }
}
