import Foundation
import TestSupport
import Testing

/// Where the property-based API tester is: schemathesis in the virtual environment that
/// `scripts/install-deps.sh --test` makes at `.build/schemathesis` (or `$PARLEY_SCHEMATHESIS`).
enum Schemathesis {
    static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let executable: String? = {
        let candidates: [String?] = [
            ProcessInfo.processInfo.environment["PARLEY_SCHEMATHESIS"], package.appendingPathComponent(".build/schemathesis/bin/st").path,
        ]
        return candidates.compactMap { $0 }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()
    static let config = package.appendingPathComponent("schemathesis.toml").path
    /// Run when the tester is here, and always in CI (where its absence is a failure).
    static var shouldRun: Bool { executable != nil || BrowserTools.inCI }
    /// One seed, so a failure can be replayed exactly (`--seed`); printed with the run.
    static let seed = "20261203"
}

/// The API's OpenAPI document against what a live node does, by schemathesis: requests the
/// document allows must be accepted (or answered 404/409/413/422), requests it forbids refused,
/// every answer's status, type and body as documented, the event stream's events as described.
@Suite(.serialized) struct SchemathesisTests {
    @Test(
        .enabled(if: Schemathesis.shouldRun, "schemathesis is not installed: scripts/install-deps.sh --test; CI runs this always"),
        .timeLimit(.minutes(4)))
    func theOpenAPIDocument_saysExactlyWhatTheServerDoes() async throws {
        let tester = try #require(Schemathesis.executable, "schemathesis is not installed: scripts/install-deps.sh --test")
        let (directory, node) = try await APITests.startNode("schemathesis")
        defer {
            node.kill()
            directory.remove()
        }
        // Real data for paths to reach: a room with a message and a task, a conversation.
        let api = try APIClient(node: node)
        let other = try await APITests.otherUser(directory, "bob")
        try api.call("POST", "/api/rooms", json: ["name": "lobby"], expect: 201)
        try api.call("POST", "/api/partitions/{partition}/messages", ["partition": "lobby"], json: ["text": "hello"], expect: 201)
        try api.call("POST", "/api/partitions/{partition}/tasks", ["partition": "lobby"], json: ["title": "book the room"], expect: 201)
        try api.call("POST", "/api/conversations", json: ["name": "lab", "members": [other]], expect: 201)

        let started = ContinuousClock.now
        let arguments = [
            "--config-file", Schemathesis.config, "--no-color", "run", "http://127.0.0.1:\(node.port)/api/openapi.json", "--seed",
            Schemathesis.seed, "-H", "Authorization: Bearer \(node.token)",
        ]
        print("schemathesis: st \(arguments.map { $0.hasPrefix("Authorization") ? "Authorization: Bearer ..." : $0 }.joined(separator: " "))")
        let run = await CompletedProcess.run(
            tester, arguments, environment: ["HOME": directory.path, "PYTHONDONTWRITEBYTECODE": "1", "SCHEMATHESIS_HOOKS": ""],
            captureIn: directory.path, timeout: .seconds(200))
        let elapsed = ContinuousClock.now - started
        let output = run.stdout.replacingOccurrences(of: node.token, with: "TOKEN")
        // The summary: operations tested, test cases generated, failures.
        let summary = output.split(separator: "\n").drop { !$0.contains("SUMMARY") }.joined(separator: "\n")
        print("schemathesis (seed \(Schemathesis.seed), \(elapsed.formatted(.units(allowed: [.seconds], fractionalPart: .show(length: 1))))):\n\(summary)")
        #expect(!run.timedOut, "schemathesis did not finish in 200 s")
        #expect(run.exitCode == 0, "schemathesis found problems:\n\(output)\n\(run.stderr)\n\(node.log)")
        #expect(output.contains("Test cases:"), "no summary from schemathesis:\n\(output)\n\(run.stderr)")
    }
}
