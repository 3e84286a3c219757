import Foundation
import TestSupport
import Testing

/// `/devices`, `/revoke` and `/pair` in the chat (docs/DESIGN.md §3.8): the list names this
/// device, revoking it from itself is refused with the way out, and a new device pairs with the
/// code `/pair` shows while the chat goes on.
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

    @Test(.timeLimit(.minutes(2))) func pair_showsACode_andANewDevicePairsWhileTheChatGoesOn() async throws {
        let tmux = try Tmux()
        defer { tmux.shutDown() }
        let directory = try tmux.dataDirectory("desk")
        // Without discovery nothing is beaconed: the new device uses the address the chat shows.
        let options = ["lobby", "--no-discovery", "--listen", "127.0.0.1:0"]
        try await tmux.startChat("desk", dataDirectory: directory, arguments: options, width: 140, height: 30)
        try #require(await tmux.waitFor("desk", contains: "Choose a nickname") != nil)
        await tmux.type("desk", "gwen")
        try #require(await tmux.waitFor("desk", contains: "[gwen#") != nil)

        await tmux.type("desk", "/pair")
        let screen = try #require(await tmux.waitFor("desk", contains: "where beacons do not reach: parley init --pair "))
        let invitation = try #require(screen.firstMatch(of: /parley init --pair ([0-9a-z]{5}-[0-9a-z]{5}@127\.0\.0\.1:[0-9]+)/)?.1)
        await tmux.type("desk", "/pair")
        try #require(await tmux.waitFor("desk", contains: "a pairing is waiting already") != nil)
        // The chat goes on while it waits.
        await tmux.type("desk", "still here")
        try #require(await tmux.waitFor("desk", contains: "still here") != nil)

        let binary = try #require(ParleyExecutable.path)
        let tablet = await CompletedProcess.run(
            binary, ["--data-dir", try tmux.dataDirectory("tablet") + "/data", "init", "--pair", String(invitation), "--name", "tablet"],
            environment: ["HOME": directory], captureIn: directory, timeout: .seconds(60))
        #expect(tablet.exitCode == 0, "\(tablet)")
        try #require(await tmux.waitFor("desk", contains: "paired tablet (") != nil)
        await tmux.type("desk", "/devices")
        try #require(await tmux.waitFor("desk", contains: "  tablet") != nil)
        await tmux.type("desk", "/pair stop")
        try #require(await tmux.waitFor("desk", contains: "no pairing is waiting") != nil)
    }
}
