import Foundation
import TestSupport
import Testing

/// `parley run`'s web options: where it listens, and what it refuses.
@Suite struct RunOptionTests {
    @Test func aNonLoopbackAddress_needsAnExplicitFlag_andThenWarns() async throws {
        let directory = TestDirectory("options")
        defer { directory.remove() }
        let node = WebNode(name: "node", in: directory)
        try await node.create(nick: "alice")
        for (arguments, fragment) in [
            (["--web", "0.0.0.0:0"], "--web-allow-remote"), (["--web", "192.0.2.1:0"], "--web-allow-remote"),
            (["--web", "example.com:80"], "IPv4 address"), (["--web", "127.0.0.1"], "HOST:PORT"),
            (["--no-web", "--web", "127.0.0.1:0"], "--no-web excludes"),
        ] {
            let result = await node.parley(["run", "--no-discovery", "--listen", "127.0.0.1:0"] + arguments)
            #expect(result.exitCode == 2 && result.stderr.contains(fragment), "\(arguments): \(result)")
        }

        try await node.start(web: ["--web", "0.0.0.0:0", "--web-allow-remote"])
        defer { node.kill() }
        #expect(node.process?.stderr.contains("reachable from the network") == true, "\(node.log)")
        // Bound to every address, it still answers only to an IPv4 literal or localhost with its
        // port, and still needs the token.
        let client = node.client
        #expect(try client.send("GET", "/api/me", headers: node.bearer).status == 200)
        #expect(try client.send("GET", "/api/me").status == 401)
        #expect(try client.send("GET", "/api/me", headers: ["Host": "evil.example:\(node.port)"].merging(node.bearer) { a, _ in a }).status == 403)
    }

    @Test func status_saysWhereTheWebUIListens_withoutTheToken() async throws {
        let (directory, node) = try await APITests.startNode("status")
        defer {
            node.kill()
            directory.remove()
        }
        let status = await node.parley(["status", "--json"])
        #expect(status.exitCode == 0 && status.stdout.contains("\"web\": \"http://127.0.0.1:\(node.port)/\""), "\(status)")
        #expect(!status.stdout.contains(node.token))
        let text = await node.parley(["status"])
        #expect(text.stdout.contains("web UI      http://127.0.0.1:\(node.port)/"), "\(text)")
    }

    @Test func anExplicitWebPortInUse_isAnError_andTheNodeLeavesCleanly() async throws {
        let (directory, first) = try await APITests.startNode("busy")
        defer {
            first.kill()
            directory.remove()
        }
        let second = WebNode(name: "second", in: directory)
        try await second.create(nick: "bob")
        let result = await second.parley(["run", "--no-discovery", "--listen", "127.0.0.1:0", "--web", "127.0.0.1:\(first.port)"])
        #expect(result.exitCode == 1 && result.stderr.contains("cannot serve the web UI"), "\(result)")
        #expect(result.stderr.contains("stopped"), "the node said goodbye before exiting: \(result)")
    }

    @Test func noWeb_servesNothing() async throws {
        let directory = TestDirectory("no-web")
        defer { directory.remove() }
        let node = WebNode(name: "node", in: directory)
        try await node.create(nick: "alice")
        let binary = try #require(ParleyExecutable.path)
        let process = try ChildProcess(
            executable: binary, arguments: ["--data-dir", node.dataDir, "run", "--no-discovery", "--listen", "127.0.0.1:0", "--no-web"],
            environment: ["HOME": directory.path], captureIn: directory.path, name: "no-web")
        defer { process.kill() }
        let up = await poll(timeout: .seconds(10)) { process.stdout.contains("listening on") || !process.isRunning }
        #expect(up && process.isRunning)
        #expect(!process.stdout.contains("web UI"), "\(process.stdout)")
        let status = await node.parley(["status"])
        #expect(status.stdout.contains("web UI      off"), "\(status)")
    }
}
