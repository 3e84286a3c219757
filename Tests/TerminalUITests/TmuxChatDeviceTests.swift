import Foundation
import Testing

/// `/devices` and `/revoke` in the chat (docs/DESIGN.md §3.8): the list names this device, and
/// revoking it from itself is refused with the way out.
@Suite(.serialized) struct TmuxChatDeviceTests {
    @Test(.timeLimit(.minutes(2))) func devices_listsThisDevice_andRevokeNamesTheProblem() async throws {
        let tmux = try Tmux()
        defer { tmux.shutDown() }
        let directory = try tmux.dataDirectory("solo")
        let options = ["lobby", "--no-discovery", "--listen", "127.0.0.1:0"]
        try await tmux.startChat("solo", dataDirectory: directory, arguments: options, width: 110, height: 30)
        try #require(await tmux.waitFor("solo", contains: "Choose a nickname") != nil)
        await tmux.type("solo", "gwen")
        try #require(await tmux.waitFor("solo", contains: "[gwen#") != nil)

        await tmux.type("solo", "/devices")
        try #require(await tmux.waitFor("solo", contains: "first device  (this device)") != nil)
        await tmux.type("solo", "/revoke")
        try #require(await tmux.waitFor("solo", contains: "usage: /revoke DEVICE") != nil)
        await tmux.type("solo", "/revoke 1")
        try #require(await tmux.waitFor("solo", contains: "no device of yours starts with '1'") != nil)
    }
}
