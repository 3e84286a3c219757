import Foundation
import Testing

/// Signing in to the web UI outlives the node (issue 35): the login secret in `web.secret` is
/// the token after a restart too, `parley web login` prints a link with it, `parley web logout
/// --all` replaces it and a running node refuses the old one at once; and `parley run` on a data
/// directory without an identity makes one instead of refusing.
@Suite(.serialized) struct WebSessionTests {
    @Test func aBrowsersToken_outlivesARestart_untilLogoutAll() async throws {
        let directory = TestDirectory("session")
        let node = WebNode(name: "alice", in: directory)
        defer {
            node.kill()
            directory.remove()
        }
        try await node.create(nick: "alice")
        try await node.start()
        let (token, port) = (node.token, node.port)
        #expect(try node.client.send("GET", "/api/me", headers: node.bearer).status == 200)
        let signIn = try node.client.send("GET", "/?token=\(token)")
        #expect(signIn.status == 303 && signIn.headers["set-cookie"]?.contains("Max-Age=34560000") == true, "\(signIn)")
        var info = stat()
        #expect(stat(node.dataDir + "/web.secret", &info) == 0 && info.st_mode & 0o777 == 0o600)

        // The node restarts on the same port: the browser's token still opens the API.
        node.kill()
        try #require(await node.process?.waitForExit(timeout: .seconds(10)) == true)
        try await node.start(web: ["--web", "127.0.0.1:\(port)"])
        #expect(node.token == token, "the printed link carries the same secret")
        #expect(try node.client.send("GET", "/api/me", headers: ["Authorization": "Bearer \(token)"]).status == 200)

        let login = await node.parley(["web", "login"])
        #expect(login.exitCode == 0 && login.stdout == "http://127.0.0.1:\(port)/?token=\(token)\n", "\(login)")

        // Everyone signed out: the running node refuses the old token at the next request.
        let logout = await node.parley(["web", "logout", "--all"])
        #expect(logout.exitCode == 0 && logout.stdout.contains("every browser is signed out"), "\(logout)")
        #expect(try node.client.send("GET", "/api/me", headers: ["Authorization": "Bearer \(token)"]).status == 401)
        let fresh = await node.parley(["web", "login"])
        let newToken = try #require(fresh.stdout.split(separator: "=").last?.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(newToken != token && newToken.count == 64)
        #expect(try node.client.send("GET", "/api/me", headers: ["Authorization": "Bearer \(newToken)"]).status == 200)
        #expect(await node.parley(["web", "logout"]).exitCode == 2, "--all is required")
    }

    @Test func runWithoutAnIdentity_makesOne_andThePageAsksForANickname() async throws {
        let directory = TestDirectory("first-run")
        let node = WebNode(name: "newcomer", in: directory)
        defer {
            node.kill()
            directory.remove()
        }
        try await node.start()
        let me = try node.client.send("GET", "/api/me", headers: node.bearer)
        #expect(me.status == 200 && me.object?["nick"] is NSNull, "\(me)")
        #expect(node.process?.stderr.contains("made a new identity") == true, "\(node.log)")
        let whoami = await node.parley(["whoami", "--json"])
        #expect(whoami.exitCode == 0, "\(whoami)")
    }
}
