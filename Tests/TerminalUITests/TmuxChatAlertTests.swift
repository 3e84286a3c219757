import Foundation
import TerminalUI
import Testing

/// What calls for attention in the terminal chat (issue 35): a mention or a private message
/// rings the bell once and marks its chat `!` in `Act:`; other messages do not ring; a muted chat
/// never rings; right-to-left text ends at the pane's right edge, and it, flags and a family emoji (one glyph in tmux) keep the screen's frame; the chat says when someone
/// leaves a conversation. Two real chats, each with its own node, linked over loopback.
@Suite(.serialized) struct TmuxChatAlertTests {
    @Test(.timeLimit(.minutes(4))) func mentionsAndPrivateMessagesRing_mutedChatsDoNot_rtlKeepsTheFrame_leavingIsSaid() async throws {
        let tmux = try Tmux()
        defer { tmux.shutDown() }
        let options = try ["lobby"] + tmux.nodeOptions(discoveryPort: Tmux.discoveryPort(slot: 4))
        for name in ["alice", "bob"] {
            try await tmux.startChat(name, dataDirectory: try tmux.dataDirectory(name), arguments: options, width: 100, height: 24)
            try #require(await tmux.waitFor(name, contains: "Choose a nickname") != nil)
            await tmux.type(name, name)
        }
        try #require(await tmux.waitFor("alice", contains: "is online") != nil)
        try #require(await tmux.waitFor("bob", contains: "is online") != nil)
        await tmux.recordOutput("alice")
        await tmux.type("alice", "/join ops")
        try #require(await tmux.waitFor("alice", contains: "[#ops]") != nil)

        // A plain message in another room: counted, no bell.
        await tmux.type("bob", "just chatting")
        try #require(await tmux.waitFor("alice", contains: "Act: #lobby 1 ") != nil)
        #expect(tmux.bells("alice") == 0)

        // A mention: one bell, and #lobby marked first with `!`.
        await tmux.type("bob", "hey @alice, look at this")
        try #require(await tmux.waitFor("alice", contains: "Act: #lobby 2! ") != nil)
        await tmux.waitForBells("alice", 1)

        // A private message: another bell, the conversation marked too.
        await tmux.type("bob", "/msg alice psst")
        try #require(await tmux.waitFor("alice", contains: "bob & alice 1!") != nil)
        await tmux.waitForBells("alice", 2)

        // Right-to-left text, flags, a family (one glyph: tmux joins it) and a skin tone (two: tmux
        // does not) in the conversation: the sidebar's edge stays in its column.
        // alice opens it only once it arrived (and rang): opening marks it read, so a message
        // still on its way as she opens it would ring or not by a race.
        await tmux.type("bob", "שלום עולם, מה נשמע? 🇮🇱🇯🇵 👨\u{200D}👩\u{200D}👧 👍🏽 ok")
        try #require(await tmux.waitFor("alice", contains: "bob & alice 2!") != nil)
        await tmux.waitForBells("alice", 3)
        await tmux.press("alice", "C-n")
        let rtl = try #require(await tmux.waitFor("alice", contains: "שלום עולם, מה נשמע? 🇮🇱🇯🇵 👨\u{200D}👩\u{200D}👧 👍🏽 ok"))
        // Measured as tmux draws: a family in 2 columns, a skin tone in 4 (what the chat asked it).
        let tmuxJoining = DisplayWidth.EmojiJoining(zeroWidthJoiner: true, skinTone: false)
        let edges = DisplayWidth.$emojiJoining.withValue(tmuxJoining) {
            Set(
                rtl.split(separator: "\n").dropFirst().prefix(21).compactMap { row -> Int? in
                    guard let bar = row.firstIndex(of: "│") else { return nil }
                    return DisplayWidth.of(row[..<bar])
                })
        }
        #expect(edges == [ChatLayout.paneWidth(forScreenWidth: 100)], "the sidebar's edge moved: \(edges)\n\(rtl)")
        // The right-to-left message ends at the pane's right edge.
        let hebrew = try #require(rtl.split(separator: "\n").first { $0.contains("שלום") })
        #expect(hebrew.contains("ok│"), "the right-to-left message is not aligned right: \(hebrew)")

        // A private message in the open conversation still rings.
        await tmux.type("bob", "still there?")
        try #require(await tmux.waitFor("alice", contains: "still there?") != nil)
        await tmux.waitForBells("alice", 4)

        // Muted: #lobby's mention is counted, plain, and silent.
        await tmux.type("alice", "/join lobby")
        try #require(await tmux.waitFor("alice", contains: "[#lobby]") != nil)
        await tmux.type("alice", "/mute")
        try #require(await tmux.waitFor("alice", contains: "#lobby (muted)") != nil)
        await tmux.type("alice", "/join ops")
        try #require(await tmux.waitFor("alice", contains: "[#ops]") != nil)
        await tmux.type("bob", "/join lobby")
        await tmux.type("bob", "@alice are you muting us?")
        let muted = try #require(await tmux.waitFor("alice", contains: "#lobby 1 "))
        #expect(!muted.contains("#lobby 1!"))
        #expect(tmux.bells("alice") == 4, "a muted chat rang")

        // bob leaves the conversation: alice reads it there.
        await tmux.press("alice", "C-n")
        try #require(await tmux.waitFor("alice", contains: "[bob & alice]") != nil)
        await tmux.type("bob", "/msg alice bye")
        await tmux.type("bob", "/leave")
        try #require(await tmux.waitFor("alice", contains: "left the conversation") != nil)
    }
}
