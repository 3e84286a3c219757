import Foundation
import Testing

/// `/join NAME --private` in `parley chat`, driven in tmux: the chat asks for the passphrase,
/// shows it masked, keeps it out of the input history, and the two holders talk in the room.
@Suite(.serialized) struct TmuxPrivateRoomTests {
    @Test(.timeLimit(.minutes(3))) func joinPrivate_asksForThePassphrase_masksIt_andTheHoldersTalk() async throws {
        let tmux = try Tmux()
        defer { tmux.shutDown() }
        try await TmuxChatSessionTests().startAliceAndBob(tmux, slot: 3)
        let passphrase = "correct horse battery staple"
        for session in ["alice", "bob"] {
            await tmux.type(session, "/join vault --private")
            await tmux.waitFor(session, contains: "passphrase of private room #vault")
            await tmux.type(session, passphrase, enter: false)
            let masked = await tmux.waitFor(session, "the passphrase masked") { $0.contains(String(repeating: "*", count: passphrase.count)) }
            #expect(masked?.contains(passphrase) == false)
            await tmux.press(session, "Enter")
            await tmux.waitFor(session, contains: "joined private room #vault")
            await tmux.waitFor(session, contains: "#vault (private)")
            // Up recalls the last line sent: the /join, never the passphrase.
            await tmux.press(session, "Up")
            let recalled = await tmux.waitFor(session, contains: "> /join vault --private")
            #expect(recalled?.contains(passphrase) == false)
            await tmux.press(session, "C-u")
        }
        await tmux.type("alice", "the vault opens at ten")
        await tmux.waitFor("bob", contains: "the vault opens at ten")
        // An empty passphrase cancels.
        await tmux.type("bob", "/join other --private")
        await tmux.waitFor("bob", contains: "passphrase for #other:")
        await tmux.press("bob", "Enter")
        await tmux.waitFor("bob", contains: "not joined: no passphrase given")
    }
}
