import Foundation
import Identity
import Replica
import Store
import TestSupport
import Testing

/// The chat's screen in tmux: small terminals, resizes, wrapping, and hostile text from peers.
@Suite(.serialized) struct TmuxChatScreenTests {
    @Test(.timeLimit(.minutes(2))) func usableAt40x12_afterResizes_andLongMessagesWrap() async throws {
        let tmux = try Tmux()
        defer { tmux.shutDown() }
        let options = ["lobby", "--no-discovery", "--listen", "127.0.0.1:0"]
        try await tmux.startChat("solo", dataDirectory: try tmux.dataDirectory("solo"), arguments: options, width: 40, height: 12)
        try #require(await tmux.waitFor("solo", contains: "Choose a nickname") != nil)
        await tmux.type("solo", "carol")
        try #require(await tmux.waitFor("solo", contains: "#lobby") != nil)

        let words = (1...24).map { "w\($0)" }
        await tmux.type("solo", words.joined(separator: " ") + " ZZEND")
        // Sent: the input line is empty again and the text is in the pane.
        let screen = try #require(
            await tmux.waitFor("solo", "the sent message") { screen in
                let rows = screen.split(separator: "\n")
                return screen.contains("ZZEND") && rows.last.map { $0.trimmingCharacters(in: .whitespaces) == ">" } == true
            })
        let lines = screen.split(separator: "\n")
        #expect(lines.count <= 12 && lines.allSatisfy { $0.count <= 40 })
        let messageLines = lines.filter { $0.contains("w1") || $0.contains("w2") }
        #expect(messageLines.count >= 2, "a long message wraps over several rows:\n\(screen)")
        #expect(screen.contains("w1 ") && screen.contains("w24"), "no word is lost:\n\(screen)")

        // Wider: the sidebar appears; narrower again: still working, the input line still there.
        await tmux.run(["resize-window", "-t", "solo", "-x", "90", "-y", "20"])
        await tmux.waitFor("solo", "the sidebar after growing") { $0.contains("Rooms") && $0.contains("ZZEND") }
        await tmux.run(["resize-window", "-t", "solo", "-x", "40", "-y", "12"])
        await tmux.waitFor("solo", "the narrow layout after shrinking") { !$0.contains("Rooms") && $0.contains("ZZEND") }
        await tmux.type("solo", "still here ✓")
        await tmux.waitFor("solo", contains: "still here ✓")
        await tmux.type("solo", "/quit")
        await tmux.waitFor("solo", contains: "chat exited 0")
    }

    @Test(.timeLimit(.minutes(2))) func commands_nickEditReactDeleteTasksJoinLeave() async throws {
        let tmux = try Tmux()
        defer { tmux.shutDown() }
        let options = ["lobby", "--no-discovery", "--listen", "127.0.0.1:0"]
        try await tmux.startChat("solo", dataDirectory: try tmux.dataDirectory("solo"), arguments: options, width: 100, height: 30)
        try #require(await tmux.waitFor("solo", contains: "Choose a nickname") != nil)
        await tmux.type("solo", "erin")
        try #require(await tmux.waitFor("solo", contains: "[erin#") != nil)

        await tmux.type("solo", "/nick dave")
        await tmux.waitFor("solo", contains: "you are now dave#")
        await tmux.type("solo", "a typo here")
        await tmux.waitFor("solo", contains: "dave#")
        await tmux.type("solo", "/edit last no typo here")
        await tmux.waitFor("solo", contains: "no typo here (edited)")
        await tmux.type("solo", "/react last 👍")
        await tmux.waitFor("solo", contains: "(edited) [👍 1]")
        await tmux.type("solo", "/delete last")
        await tmux.waitFor("solo", contains: "(message deleted)")

        await tmux.type("solo", "/task add buy milk")
        let added = try #require(await tmux.waitFor("solo", contains: "added task "))
        let id = try #require(added.components(separatedBy: "added task ").last?.prefix(10))
        await tmux.type("solo", "/task set \(id) --status complete")
        await tmux.waitFor("solo", contains: "task updated")
        await tmux.type("solo", "/tasks")
        await tmux.waitFor("solo", "the board with the task complete") { $0.contains("Complete (1)") && $0.contains("buy milk") }

        await tmux.type("solo", "/join dev")
        await tmux.waitFor("solo", "#dev open") { $0.hasPrefix(" #dev") }
        await tmux.type("solo", "/leave")
        await tmux.waitFor("solo", "back in #lobby") { $0.hasPrefix(" #lobby") && $0.contains("left #dev") && !$0.contains("│ #dev") }
        await tmux.type("solo", "/who")
        await tmux.waitFor("solo", contains: "dave#")
        await tmux.waitFor("solo", contains: "(you) online")
        await tmux.type("solo", "/frobnicate")
        await tmux.waitFor("solo", contains: "unknown command /frobnicate")
        await tmux.type("solo", "/msg nobody-here hi")
        await tmux.waitFor("solo", contains: "unknown user 'nobody-here'")
        await tmux.type("solo", "/quit")
        await tmux.waitFor("solo", contains: "chat exited 0")
    }

    @Test(.timeLimit(.minutes(3))) func controlCharactersFromPeers_neverReachTheTerminal() async throws {
        let tmux = try Tmux()
        defer { tmux.shutDown() }
        let options = try ["lobby"] + tmux.nodeOptions(discoveryPort: Tmux.discoveryPort(slot: 1))
        let aliceDirectory = try tmux.dataDirectory("alice")
        try await tmux.startChat("alice", dataDirectory: aliceDirectory, arguments: options)
        try await tmux.startChat("bob", dataDirectory: try tmux.dataDirectory("bob"), arguments: options)
        for session in ["alice", "bob"] {
            try #require(await tmux.waitFor(session, contains: "Choose a nickname") != nil)
            await tmux.type(session, session)
        }
        try #require(await tmux.waitFor("bob", contains: "alice#") != nil)
        await tmux.type("bob", "before the attack")
        try #require(await tmux.waitFor("alice", contains: "before the attack") != nil)
        let title = await tmux.format("bob", "#{pane_title}")
        // Every byte bob's chat writes to its terminal, from here on.
        let raw = tmux.directory + "/bob.raw"
        await tmux.run(["pipe-pane", "-o", "-t", "bob", "cat > '\(raw)'"])

        // alice's node turns hostile: escape sequences in a message, her nickname and a
        // conversation name (written straight into her store, as a modified node would).
        let store = try NodeStore.open(aliceDirectory)
        let alice = try KeyFile.load(at: aliceDirectory + "/identity.key", passphrase: nil)
        try store.useIdentity(alice)
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        let lobby = PartitionDescriptor.room(RoomName("lobby")!).id
        let attack = "\u{1B}]0;pwned-title\u{07}\u{1B}]2;pwned-title\u{07}\u{1B}[2J\u{1B}[H\u{1B}c\u{9B}2J\u{202E}evil\u{7}END-OF-ATTACK"
        try store.author(.post(text: attack, attachments: [], location: nil, replyTo: nil), in: lobby, by: alice, nowMillis: now)
        try store.author(
            .profile(subject: alice.id, nick: "m\u{1B}]0;nick-title\u{07}allory", displayName: nil, status: nil, presence: nil, avatar: nil),
            in: PartitionDescriptor.directory.id, by: alice, nowMillis: now)
        let bob = try #require(try store.directory.profiles().first { $0.nick == "bob" }?.user)
        _ = try store.createConversation(name: "room\u{1B}]0;conv-title\u{07}\u{1B}[2J", members: [bob], by: alice, nowMillis: now)
        store.database.close()

        let screen = try #require(await tmux.waitFor("bob", contains: "END-OF-ATTACK"))
        await tmux.waitFor("bob", "the hostile nick and conversation name") { $0.contains("allory#") && $0.contains("conv-title") }
        let after = await tmux.screen("bob")
        #expect(after.contains("before the attack"), "the screen was not cleared:\n\(after)")
        #expect(screen.contains("\u{FFFD}]0;pwned-title"), "the escape shows as a replacement character:\n\(screen)")
        #expect(await tmux.format("bob", "#{pane_title}") == title, "the window title did not change")
        await tmux.run(["pipe-pane", "-t", "bob"])
        let bytes = try #require(FileManager.default.contents(atPath: raw))
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains("pwned-title"), "the raw output was captured")
        #expect(!text.contains("\u{1B}]"), "no OSC sequence (window title) reached the terminal")
        #expect(!text.contains("\u{1B}c"), "no reset reached the terminal")
        #expect(!text.contains("\u{07}"), "no bell reached the terminal")
        #expect(!bytes.contains(0x9B) || !text.unicodeScalars.contains("\u{9B}"), "no 8-bit CSI reached the terminal")
        #expect(!text.unicodeScalars.contains("\u{202E}"), "no bidi override reached the terminal")
        await tmux.type("bob", "/quit")
        await tmux.waitFor("bob", contains: "chat exited 0")
    }
}
