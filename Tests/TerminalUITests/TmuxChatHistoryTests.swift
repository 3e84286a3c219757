import Foundation
import NodeRuntime
import TestSupport
import Testing

/// A long room in the terminal chat (issue 35): Page Up reaches its first message however long
/// it is (the chat reads it a page at a time), the view stays put while messages arrive below
/// it, Page Down comes back to the newest, and Ctrl-G goes to where the unread began and back.
/// Two real nodes: bob's writes (through his control socket) reach alice's, and her chat.
@Suite(.serialized) struct TmuxChatHistoryTests {
    static let roomSize = 1_200

    @Test(.timeLimit(.minutes(4))) func pageUpReachesTheFirstMessage_theViewStaysWhileMessagesArrive_ctrlGFindsTheUnread() async throws {
        let tmux = try Tmux()
        defer { tmux.shutDown() }
        let options = try tmux.nodeOptions(discoveryPort: Tmux.discoveryPort(slot: 3))
        let (directory, node) = try await tmux.startNode("alice", nick: "alice", options: options)
        defer { node.kill() }
        let (bobDirectory, bobNode) = try await tmux.startNode("bob", nick: "bob", options: options)
        defer { bobNode.kill() }
        let parley = try #require(ParleyExecutable.path, Comment(rawValue: ParleyExecutable.notFoundMessage))
        for dataDirectory in [directory, bobDirectory] {
            let joined = await CompletedProcess.run(
                parley, ["--data-dir", dataDirectory, "join", "lobby"], environment: ["HOME": tmux.directory], captureIn: tmux.directory)
            try #require(joined.exitCode == 0, "\(joined)")
        }
        // bob writes (his messages are unread for alice); his node passes them to hers.
        let bob = try ControlClient.connect(dataDirectory: bobDirectory)
        defer { bob.close() }
        func post(_ texts: [String]) async throws {
            for text in texts {
                let response = try await bob.send(ControlRequest(.author, author: AuthorRequest(kind: "post", room: "lobby", text: text)))
                try #require(response.error == nil, "bob's node did not post: \(response.error ?? "")")
            }
        }
        try await post(["the very first message"] + (2...Self.roomSize).map { String(format: "msg %04d", $0) })

        try await tmux.startChat("alice", dataDirectory: directory, arguments: ["lobby"] + options, width: 100, height: 24)
        try #require(await tmux.waitFor("alice", contains: "msg \(Self.roomSize)", timeout: .seconds(60)) != nil)

        // Page Up, ten presses at a time, until the first message: three windows' worth of pages.
        try await pressUntil(tmux, "PPage", "the beginning of #lobby") { $0.contains("beginning of #lobby") }
        let top = try #require(await tmux.waitFor("alice", contains: "the very first message"))
        #expect(top.contains("-- more below"))

        // Messages arriving below do not move what is being read; the unread count says they came.
        let pane = Self.pane(top)
        try await post((1...5).map { "live \($0)" })
        let counted = try #require(await tmux.waitFor("alice", "#lobby's unread count") { $0.contains("#lobby") && Self.sidebarCount($0, "#lobby") == 5 })
        #expect(Self.pane(counted) == pane, "the view moved while messages arrived")

        // Page Down back to the newest: the new messages are there, and read.
        try await pressUntil(tmux, "NPage", "the newest message") { $0.contains("live 5") && !$0.contains("more below") }
        try #require(await tmux.waitFor("alice", "#lobby read") { Self.sidebarCount($0, "#lobby") == nil } != nil)

        // 300 messages while alice is in #ops; back in #lobby the first unread is far above.
        await tmux.type("alice", "/join ops")
        try #require(await tmux.waitFor("alice", contains: "[#ops]") != nil)
        try await post((1...300).map { String(format: "unread %03d", $0) })
        try #require(await tmux.waitFor("alice", contains: "Act: #lobby 300") != nil)
        await tmux.press("alice", "C-p")
        try #require(await tmux.waitFor("alice", "#lobby at its newest") { $0.contains("[#lobby]") && $0.contains("unread 300") } != nil)
        await tmux.press("alice", "C-g")
        let unread = try #require(await tmux.waitFor("alice", "the first unread") { $0.contains("─ new ─") && $0.contains("unread 001") })
        #expect(unread.contains("live 5"), "a few read messages above the line")
        #expect(!unread.contains("unread 300"))
        await tmux.press("alice", "C-g")
        try #require(await tmux.waitFor("alice", "back at the newest") { $0.contains("unread 300") && !$0.contains("more below") } != nil)
    }

    /// Presses `key` ten times, waits for the screen to change, and again, until `done`.
    func pressUntil(_ tmux: Tmux, _ key: String, _ what: String, done: (String) -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(90)
        var screen = await tmux.screen("alice")
        while !done(screen) {
            try #require(ContinuousClock.now < deadline, "never reached \(what); the screen:\n\(screen)")
            await tmux.run(["send-keys", "-t", "alice"] + Array(repeating: key, count: 10))
            let before = screen
            let changed = ContinuousClock.now + .seconds(5)
            repeat {
                try await Task.sleep(for: .milliseconds(50))
                screen = await tmux.screen("alice")
            } while screen == before && ContinuousClock.now < changed
        }
    }

    /// The message pane of a screen: its rows between the header and the status bar, up to the
    /// sidebar's edge.
    static func pane(_ screen: String) -> [String] {
        let rows = screen.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        return rows.dropFirst().prefix(21).map { $0.split(separator: "│", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? $0 }
    }

    /// The unread count the sidebar shows beside `label`, if any.
    static func sidebarCount(_ screen: String, _ label: String) -> Int? {
        for row in screen.split(separator: "\n") {
            guard let side = row.split(separator: "│", maxSplits: 1).dropFirst().first else { continue }
            let words = side.split(separator: " ")
            if words.first.map(String.init) == label { return words.count > 1 ? Int(words[words.count - 1]) : nil }
        }
        return nil
    }
}
