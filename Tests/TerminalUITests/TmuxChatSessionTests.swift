import Foundation
import Testing

/// `parley chat` driven in tmux: two real sessions, each with its own data directory and an
/// in-process node, linked over loopback (docs/DESIGN.md §8: the terminal chat driven in tmux).
@Suite(.serialized) struct TmuxChatSessionTests {
    /// Starts alice and bob (fresh data directories: both see the nickname prompt), logs them
    /// in, and waits until each sees the other online.
    func startAliceAndBob(_ tmux: Tmux, slot: Int, width: Int = 80, height: Int = 24) async throws {
        let options = try ["lobby"] + tmux.nodeOptions(discoveryPort: Tmux.discoveryPort(slot: slot))
        try await tmux.startChat("alice", dataDirectory: try tmux.dataDirectory("alice"), arguments: options, width: width, height: height)
        try await tmux.startChat("bob", dataDirectory: try tmux.dataDirectory("bob"), arguments: options, width: width, height: height)
        for (session, nick) in [("alice", "alice"), ("bob", "bob")] {
            try #require(await tmux.waitFor(session, contains: "Choose a nickname") != nil)
            await tmux.type(session, nick)
        }
        try #require(await tmux.waitFor("alice", contains: "bob#") != nil)
        try #require(await tmux.waitFor("bob", contains: "alice#") != nil)
        try #require(await tmux.waitFor("alice", contains: "is online") != nil)
        try #require(await tmux.waitFor("bob", contains: "is online") != nil)
    }

    /// Leaves with /quit and checks the shell behind the chat works as before: the exit status
    /// is 0, and typed text echoes and runs in canonical mode again.
    func quitAndCheckTerminal(_ tmux: Tmux, _ session: String) async {
        await tmux.type(session, "/quit")
        await tmux.waitFor(session, contains: "chat exited 0", timeout: .seconds(20))
        await tmux.type(session, "stty -a | tr ' ;' '\\n\\n' | grep -x -e echo -e icanon | sort | tr '\\n' ' '; echo END")
        await tmux.waitFor(session, "echo and icanon restored") { $0.contains("echo icanon END") }
    }

    @Test(.timeLimit(.minutes(3))) func twoSessions_talkInLobby_privateConversation_unreadCounts_quitCleanly() async throws {
        let tmux = try Tmux()
        defer { tmux.shutDown() }
        try await startAliceAndBob(tmux, slot: 0)

        // A message typed in one appears in the other, accents and emoji intact.
        await tmux.type("alice", "hello bob, café 👋 日本")
        await tmux.waitFor("bob", contains: "alice#")
        await tmux.waitFor("bob", contains: "hello bob, café 👋 日本")

        // Typing shows live on the other side, before anything is sent.
        await tmux.type("bob", "I am typing", enter: false)
        await tmux.waitFor("alice", "bob typing") { $0.contains("bob#") && $0.contains("is typing") }
        await tmux.press("bob", "C-u")

        // /msg starts a private conversation; bob sees it with an unread count.
        await tmux.type("alice", "/msg bob psst, just us")
        await tmux.waitFor("alice", contains: "psst, just us")
        let unread = await tmux.waitFor("bob", "the conversation's unread count") { $0.contains("Act: alice & bob 1") }
        #expect(unread?.contains("psst") == false)

        // bob answers with /msg alice: the same conversation opens, its count clears, alice reads it.
        await tmux.type("bob", "/msg alice hi alice, only you see this")
        await tmux.waitFor("bob", contains: "psst, just us")
        await tmux.waitFor("bob", "the unread count cleared") { !$0.contains("Act:") && $0.contains("hi alice, only you") }
        await tmux.waitFor("alice", contains: "hi alice, only you see this")

        // A lobby message while bob is in the conversation counts as unread in #lobby; switching clears it.
        await tmux.press("alice", "C-p")
        await tmux.waitFor("alice", contains: "hello bob, café")
        await tmux.type("alice", "back in the lobby")
        await tmux.waitFor("bob", "#lobby unread") { $0.contains("Act: #lobby 1") }
        await tmux.press("bob", "C-p")
        await tmux.waitFor("bob", "#lobby read") { $0.contains("back in the lobby") && !$0.contains("Act:") }
        let lobby = await tmux.screen("bob")
        #expect(lobby.contains(" new "), "the unread marker stands before the unread message:\n\(lobby)")

        // Attachments show by name and size on the other side.
        let file = tmux.directory + "/map.txt"
        try "north".write(toFile: file, atomically: true, encoding: .utf8)
        await tmux.type("alice", "/attach \(file) the way in")
        await tmux.waitFor("bob", contains: "the way in [📎 map.txt, 5 B]")

        // /conv: a named conversation with bob, then bob removed, then alice leaves it.
        await tmux.type("alice", "/conv new team bob")
        await tmux.waitFor("alice", "the new conversation open") { $0.hasPrefix(" team") }
        await tmux.waitFor("bob", contains: "│ team")
        await tmux.type("alice", "/conv remove bob")
        await tmux.waitFor("alice", contains: "removed bob#")
        await tmux.type("alice", "/conv leave")
        await tmux.waitFor("alice", contains: "left 'team'")
        await tmux.waitFor("alice", "team gone from alice's list") { !$0.contains("│ team") }

        // Scrollback: PgUp shows older lines and says there is more below; PgDn returns.
        await tmux.type("bob", "/help")
        await tmux.waitFor("bob", contains: "/quit — leave the chat")
        await tmux.press("bob", "PPage")
        await tmux.waitFor("bob", contains: "more below")
        await tmux.press("bob", "NPage")
        await tmux.waitFor("bob", "back at the newest") { !$0.contains("more below") }

        await quitAndCheckTerminal(tmux, "alice")
        // Presence changes show live: bob sees alice leave.
        await tmux.waitFor("bob", contains: "went offline")
        await quitAndCheckTerminal(tmux, "bob")
    }
}
