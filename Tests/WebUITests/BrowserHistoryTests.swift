import Foundation
import TestSupport
import Testing

/// A long room on the page in a real headless Chromium (`browser/history.py`): 20,000 messages,
/// every one reachable by scrolling with a bounded list; the first unread and the newest a click
/// away; the view still while the reader is far up and messages arrive; keys echoed promptly
/// while 20 messages a second arrive (the figures it prints are in docs/BENCHMARKS.md).
@Suite(.serialized) struct BrowserHistoryTests {
    static let driver = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("browser/history.py").path

    @Test(
        .enabled(if: BrowserTools.shouldRun, "chromium or python3 is missing (apt-get install chromium fonts-noto-color-emoji); CI runs this always"),
        .timeLimit(.minutes(8)))
    func longRoom_scrollsToItsFirstMessage_withABoundedList_andStaysPutWhileMessagesArrive() async throws {
        let chromium = try #require(BrowserTools.chromium, "chromium is not installed: apt-get install chromium fonts-noto-color-emoji")
        let python = try #require(BrowserTools.python, "python3 is not installed")
        let directory = TestDirectory("browser-history")
        let nodes = [WebNode(name: "alice", in: directory), WebNode(name: "bob", in: directory)]
        defer {
            for node in nodes { node.kill() }
            directory.remove()
        }
        let network = ["--broadcast", "127.255.255.255", "--discovery-port", "\(WebTestPorts.discovery(slot: 1))"]
        for node in nodes {
            try await node.create(nick: node.name)
            try await node.start(network: network)
            #expect(await node.parley(["join", "lobby"]).exitCode == 0)
        }
        let linked = await poll(timeout: .seconds(20), interval: .milliseconds(200)) {
            let peers = await nodes[0].parley(["peers", "--json"]).stdout
            return peers.contains(nodes[1].id) && peers.contains("\"linked\"")
        }
        try #require(linked, "the two nodes did not link:\n\(nodes.map(\.log).joined(separator: "\n"))")

        let driver = try ChildProcess(
            executable: python, arguments: [Self.driver, chromium, nodes[0].url, nodes[0].dataDir, nodes[1].dataDir, directory.path],
            environment: ["HOME": directory.path, "PYTHONDONTWRITEBYTECODE": "1"], captureIn: directory.path, name: "history")
        defer { driver.kill() }
        let ended = await driver.waitForExit(timeout: .seconds(420))
        print("history driver output:\n\(driver.stdout)")
        let report = "driver output:\n\(driver.stdout)\n\(driver.stderr)\n\(nodes.map(\.log).joined(separator: "\n"))"
        try #require(ended, "the browser driver did not finish in 420 s\n\(report)")
        #expect(driver.exitStatus == 0, Comment(rawValue: "the long-room browser test failed\n\(report)"))
    }
}
