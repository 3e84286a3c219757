import Foundation
import TestSupport
import Testing

/// Where the browser and its driver are: Debian's `chromium` (or `$PARLEY_CHROMIUM`) and stock
/// python3, which drives it over the DevTools protocol (`browser/cdp.py`).
enum BrowserTools {
    static let chromium: String? = {
        let candidates = [ProcessInfo.processInfo.environment["PARLEY_CHROMIUM"], "/usr/bin/chromium", "/usr/bin/chromium-browser"]
        return candidates.compactMap { $0 }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()
    static let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static var inCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }
    /// Run when the tools are here, and always in CI (where their absence is a failure).
    static var shouldRun: Bool { (chromium != nil && python != nil) || inCI }

    static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// `.build/web-screenshots` in the package, for a person to look at.
    static let screenshots = package.appendingPathComponent(".build/web-screenshots").path
    static func driver(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("browser/\(name)").path
    }

    /// With `PARLEY_UPDATE_SCREENSHOTS=1`, a passing browser test copies the screenshots the
    /// README shows (`docs-desktop.png` and its kin) over `docs/screenshots/` (one command
    /// refreshes them after the page changed).
    static var updatesDocs: Bool { ProcessInfo.processInfo.environment["PARLEY_UPDATE_SCREENSHOTS"] == "1" }
    static let docsScreenshots = package.appendingPathComponent("docs/screenshots").path
}

/// Ports for this test process: a discovery port below the ephemeral range, apart from the node
/// tests' range (20000-29999), derived from the pid so concurrent runs do not meet.
enum WebTestPorts {
    static func discovery(slot: Int) -> UInt16 { UInt16(10_000 + Int(getpid() % 400) * 25 + slot) }
}

/// The web UI end to end in a real headless Chromium: two linked nodes, a page on each.
@Suite(.serialized) struct BrowserTests {
    @Test(
        .enabled(if: BrowserTools.shouldRun, "chromium or python3 is missing (apt-get install chromium fonts-noto-color-emoji); CI runs this always"),
        .timeLimit(.minutes(5)))
    func twoNodes_twoPages_chatConversationAvatarAndTaskBoard() async throws {
        let chromium = try #require(BrowserTools.chromium, "chromium is not installed: apt-get install chromium fonts-noto-color-emoji")
        let python = try #require(BrowserTools.python, "python3 is not installed")
        let directory = TestDirectory("browser")
        let nodes = [WebNode(name: "alice", in: directory), WebNode(name: "bob", in: directory)]
        defer {
            for node in nodes { node.kill() }
            directory.remove()
        }
        let network = ["--broadcast", "127.255.255.255", "--discovery-port", "\(WebTestPorts.discovery(slot: 0))"]
        for node in nodes {
            try await node.create(nick: nil)  // the page's nickname screen sets it
            try await node.start(network: network)
        }
        let linked = await poll(timeout: .seconds(20), interval: .milliseconds(200)) {
            let peers = await nodes[0].parley(["peers", "--json"]).stdout
            return peers.contains(nodes[1].id) && peers.contains("\"linked\"")
        }
        try #require(linked, "the two nodes did not link:\n\(nodes.map(\.log).joined(separator: "\n"))")
        // A room of alice's with a topic, for bob's "Browse rooms".
        #expect(await nodes[0].parley(["join", "ops", "--topic", "night shift"]).exitCode == 0)
        #expect(await nodes[0].parley(["send", "--room", "ops", "ops is open"]).exitCode == 0)

        try FileManager.default.createDirectory(atPath: BrowserTools.screenshots, withIntermediateDirectories: true)
        for old in (try? FileManager.default.contentsOfDirectory(atPath: BrowserTools.screenshots)) ?? [] where old.hasSuffix(".png") {
            try? FileManager.default.removeItem(atPath: BrowserTools.screenshots + "/" + old)
        }
        print("web UI screenshots: \(BrowserTools.screenshots)")
        let driver = try ChildProcess(
            executable: python,
            arguments: [
                BrowserTools.driver("e2e.py"), chromium, nodes[0].url, nodes[1].url, BrowserTools.screenshots, directory.path,
                try #require(ParleyExecutable.path),
            ],
            environment: ["HOME": directory.path, "PYTHONDONTWRITEBYTECODE": "1"], captureIn: directory.path, name: "e2e")
        defer { driver.kill() }
        let ended = await driver.waitForExit(timeout: .seconds(240))
        let report = "driver output:\n\(driver.stdout)\n\(driver.stderr)\n\(nodes.map(\.log).joined(separator: "\n"))"
        try #require(ended, "the browser driver did not finish in 240 s\n\(report)")
        if driver.exitStatus != 0 {
            Issue.record(Comment(rawValue: "the browser test failed (screenshots in \(BrowserTools.screenshots))\n\(report)"))
        }
        let shots = (try? FileManager.default.contentsOfDirectory(atPath: BrowserTools.screenshots)) ?? []
        #expect(shots.filter { $0.hasSuffix(".png") }.count >= 24, "screenshots: \(shots.sorted())")
        if BrowserTools.updatesDocs && driver.exitStatus == 0 {
            for view in ["desktop", "phone", "dark"] {
                let target = BrowserTools.docsScreenshots + "/\(view).png"
                try? FileManager.default.removeItem(atPath: target)
                try FileManager.default.copyItem(atPath: BrowserTools.screenshots + "/docs-\(view).png", toPath: target)
                print("updated \(target)")
            }
        }
    }

    /// `parley run` on an empty data directory makes the identity; the page it prints asks for a
    /// nickname and then lets the newcomer post in #lobby (`browser/first_run.py`).
    @Test(
        .enabled(if: BrowserTools.shouldRun, "chromium or python3 is missing (apt-get install chromium fonts-noto-color-emoji); CI runs this always"),
        .timeLimit(.minutes(2)))
    func firstRun_pageAsksForANickname_thenPostsInTheLobby() async throws {
        let chromium = try #require(BrowserTools.chromium, "chromium is not installed: apt-get install chromium fonts-noto-color-emoji")
        let python = try #require(BrowserTools.python, "python3 is not installed")
        let directory = TestDirectory("browser-first-run")
        let node = WebNode(name: "newcomer", in: directory)
        defer {
            node.kill()
            directory.remove()
        }
        try await node.start()  // no `parley init` first: the data directory does not exist yet
        #expect(node.process?.stderr.contains("made a new identity") == true, "\(node.log)")

        let shots = BrowserTools.screenshots + "/first-run"
        let driver = try ChildProcess(
            executable: python, arguments: [BrowserTools.driver("first_run.py"), chromium, node.url, shots, directory.path],
            environment: ["HOME": directory.path, "PYTHONDONTWRITEBYTECODE": "1"], captureIn: directory.path, name: "first-run")
        defer { driver.kill() }
        let ended = await driver.waitForExit(timeout: .seconds(90))
        let report = "driver output:\n\(driver.stdout)\n\(driver.stderr)\n\(node.log)"
        try #require(ended, "the browser driver did not finish in 90 s\n\(report)")
        #expect(driver.exitStatus == 0, Comment(rawValue: "the first-run browser test failed (screenshots in \(shots))\n\(report)"))

        // What the page did, as the node keeps it.
        let me = try node.client.send("GET", "/api/me", headers: node.bearer)
        #expect(me.object?["nick"] as? String == "carol", "\(me)")
        let lobby = try node.client.send("GET", "/api/partitions/lobby/messages", headers: node.bearer)
        #expect(lobby.array?.contains { $0["text"] as? String == "hello, I'm new here" } == true, "\(lobby)")
    }
}
