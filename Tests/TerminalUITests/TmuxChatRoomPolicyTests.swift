import Foundation
import Testing

/// The chat's part in room policies and the directory: `/topic` sets the open room's topic (the
/// first policy makes its author the owner), the header shows it, `/list` lists the rooms.
@Suite(.serialized) struct TmuxChatRoomPolicyTests {
    @Test(.timeLimit(.minutes(2))) func topicShowsInTheHeader_andListShowsTheRooms() async throws {
        let tmux = try Tmux()
        defer { tmux.shutDown() }
        let options = ["lobby", "--no-discovery", "--listen", "127.0.0.1:0"]
        try await tmux.startChat("policy", dataDirectory: try tmux.dataDirectory("policy"), arguments: options, width: 100, height: 24)
        try #require(await tmux.waitFor("policy", contains: "Choose a nickname") != nil)
        await tmux.type("policy", "dana")
        try #require(await tmux.waitFor("policy", contains: "#lobby") != nil)
        await tmux.type("policy", "/join ops")
        await tmux.waitFor("policy", "#ops open") { $0.split(separator: "\n").first?.contains("#ops") == true }
        await tmux.type("policy", "/topic on-call hand-over")
        await tmux.waitFor("policy", "the topic in the header") { screen in
            screen.split(separator: "\n").first?.contains("#ops — on-call hand-over") == true
        }
        await tmux.type("policy", "/list")
        await tmux.waitFor("policy", "the directory") { $0.contains("#ops") && $0.contains("1 person") && $0.contains("joined") }
        await tmux.type("policy", "/topic")
        await tmux.waitFor("policy", contains: "keeps: everything")
        await tmux.type("policy", "/quit")
        await tmux.waitFor("policy", contains: "chat exited 0")
    }
}
