import Foundation
import Testing

/// Tab in the chat (issue 35): a nickname begun before the cursor is completed, with its `@`;
/// with nothing to complete, Tab goes to the next room as before.
@Suite(.serialized) struct TmuxChatCompletionTests {
    @Test(.timeLimit(.minutes(2))) func tab_completesANickname_elseSwitchesRooms() async throws {
        let tmux = try Tmux()
        defer { tmux.shutDown() }
        let directory = try tmux.dataDirectory("solo")
        let options = ["lobby", "--no-discovery", "--listen", "127.0.0.1:0"]
        try await tmux.startChat("solo", dataDirectory: directory, arguments: options, width: 100, height: 24)
        try #require(await tmux.waitFor("solo", contains: "Choose a nickname") != nil)
        await tmux.type("solo", "gwendolyn")
        try #require(await tmux.waitFor("solo", contains: "[gwendolyn#") != nil)
        await tmux.type("solo", "/join ops")
        try #require(await tmux.waitFor("solo", contains: "[#ops]") != nil)

        await tmux.type("solo", "thanks @GWE", enter: false)
        await tmux.press("solo", "Tab")
        await tmux.type("solo", "ok", enter: false)
        try #require(await tmux.waitFor("solo", contains: "> thanks @gwendolyn ok") != nil, "completed, with a space after")
        await tmux.press("solo", "C-u")
        await tmux.press("solo", "Tab")
        try #require(await tmux.waitFor("solo", contains: "[#lobby]") != nil, "an empty line: Tab is the next room")
    }
}
