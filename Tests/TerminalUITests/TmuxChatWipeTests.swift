import Foundation
import Testing

/// `/wipe` in the chat (docs/DESIGN.md §5.1): a warning first, then `/wipe yes` destroys the keys,
/// stops the in-process node, removes the data directory's files and leaves the chat.
@Suite(.serialized) struct TmuxChatWipeTests {
    @Test(.timeLimit(.minutes(2))) func wipe_asksFirst_thenWipesAndLeaves() async throws {
        let tmux = try Tmux()
        defer { tmux.shutDown() }
        let directory = try tmux.dataDirectory("solo")
        let options = ["lobby", "--no-discovery", "--listen", "127.0.0.1:0"]
        try await tmux.startChat("solo", dataDirectory: directory, arguments: options, width: 100, height: 30)
        try #require(await tmux.waitFor("solo", contains: "Choose a nickname") != nil)
        await tmux.type("solo", "gwen")
        try #require(await tmux.waitFor("solo", contains: "[gwen#") != nil)
        await tmux.type("solo", "words to be wiped")
        await tmux.waitFor("solo", contains: "words to be wiped")

        await tmux.type("solo", "/wipe")
        try #require(await tmux.waitFor("solo", contains: "type /wipe yes to do it") != nil)
        #expect(FileManager.default.fileExists(atPath: directory + "/identity.key"), "the warning alone wipes nothing")

        await tmux.type("solo", "/wipe yes")
        try #require(await tmux.waitFor("solo", contains: "chat exited 0") != nil)
        let left = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        #expect(left.isEmpty, "files left after /wipe yes: \(left)")
    }
}
