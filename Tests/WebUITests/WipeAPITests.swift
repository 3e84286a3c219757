import Foundation
import TestSupport
import Testing

/// `POST /api/wipe` (docs/DESIGN.md §5.1): refused without its confirmation; with it, the keys
/// are gone before the answer, the node stops, and the data directory keeps no file.
@Suite struct WipeAPITests {
    @Test func wipe_needsItsConfirmation_thenStopsTheNodeAndLeavesNoFile() async throws {
        let (directory, node) = try await APITests.startNode("wipe")
        defer {
            node.kill()
            directory.remove()
        }
        let api = try APIClient(node: node)
        try api.call("POST", "/api/partitions/{partition}/messages", ["partition": "lobby"], json: ["text": "wipe me from the web"], expect: 201)
        try api.call("POST", "/api/wipe", json: ["confirm": "yes"], expect: 400)
        #expect(FileManager.default.fileExists(atPath: node.dataDir + "/identity.key"), "a refused wipe touches nothing")

        let wiped = try api.call("POST", "/api/wipe", json: ["confirm": "wipe"], expect: 200)
        #expect(wiped.object?["wiped"] as? Bool == true, "\(wiped)")
        // The keys go before the answer.
        #expect(!FileManager.default.fileExists(atPath: node.dataDir + "/identity.key"))
        #expect(!FileManager.default.fileExists(atPath: node.dataDir + "/store.key"))
        let process = try #require(node.process)
        #expect(await process.waitForExit(timeout: .seconds(10)), "the node still runs after the wipe:\n\(node.log)")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: node.dataDir)) ?? []
        #expect(left.isEmpty, "files left after the wipe: \(left)")
    }
}
