import Foundation
import Testing

/// Issue 39: text that is not UTF-8 is refused with a clear error by the API, as by the CLI
/// (`TextInputOutputTests`), never stored repaired.
@Suite struct APIEncodingTests {
    @Test func bodiesThatAreNotUTF8_areRefusedWith400_namingTheProblem_andNothingIsStored() async throws {
        let (directory, node) = try await APITests.startNode("encoding")
        defer {
            node.kill()
            directory.remove()
        }
        let api = try APIClient(node: node)
        let post = "/api/partitions/{partition}/messages"
        // Latin-1 "café" inside a JSON string: the byte 0xE9 alone is not UTF-8.
        let latin1 = Array(#"{"text": "caf"#.utf8) + [0xE9] + Array(#" au lait"}"#.utf8)
        let refused = try api.call("POST", post, ["partition": "lobby"], raw: latin1, expect: 400)
        print("APIEncodingTests: \(refused.errorMessage ?? "no message")")
        #expect(refused.errorMessage?.contains("not valid UTF-8") == true, "\(refused)")
        // A lone surrogate escape names no character either.
        let surrogate = Array(#"{"text": "a\ud800b"}"#.utf8)
        let escaped = try api.call("POST", post, ["partition": "lobby"], raw: surrogate, expect: 400)
        print("APIEncodingTests: \(escaped.errorMessage ?? "no message")")
        #expect(escaped.errorMessage?.isEmpty == false, "\(escaped)")

        let history = try api.call("GET", "/api/partitions/{partition}/messages", ["partition": "lobby"], expect: 200)
        #expect(history.array?.isEmpty == true, "\(history)")
        try api.call("POST", post, ["partition": "lobby"], json: ["text": "café au lait"], expect: 201)
    }
}
