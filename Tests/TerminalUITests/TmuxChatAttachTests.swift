import Foundation
import TestSupport
import Testing

/// `parley chat` beside a running `parley run`: it attaches through the control socket instead
/// of starting a node, works live both ways, and leaving it (Ctrl-C here) leaves the node running.
@Suite(.serialized) struct TmuxChatAttachTests {
    @Test(.timeLimit(.minutes(3))) func attachesToTheRunningNode_andCtrlCLeavesItRunning() async throws {
        let tmux = try Tmux()
        defer { tmux.shutDown() }
        let options = try tmux.nodeOptions(discoveryPort: Tmux.discoveryPort(slot: 2))
        let (aliceDirectory, node) = try await tmux.startNode("alice", nick: "alice", options: options)
        defer { node.kill() }

        // alice has a nickname already: no prompt; her chat shows the node it attached to.
        try await tmux.startChat("alice", dataDirectory: aliceDirectory, arguments: ["lobby"] + options)
        try #require(await tmux.waitFor("alice", contains: "[node \(node.pid), 0 linked]") != nil)
        try await tmux.startChat("bob", dataDirectory: try tmux.dataDirectory("bob"), arguments: ["lobby"] + options)
        try #require(await tmux.waitFor("bob", contains: "Choose a nickname") != nil)
        await tmux.type("bob", "bob")
        try #require(await tmux.waitFor("alice", contains: "bob#") != nil)

        await tmux.type("bob", "hello attached alice")
        await tmux.waitFor("alice", contains: "hello attached alice")
        await tmux.type("alice", "hello from the attached chat")
        await tmux.waitFor("bob", contains: "hello from the attached chat")

        await tmux.press("alice", "C-c")
        await tmux.waitFor("alice", contains: "chat exited 0")
        #expect(node.isRunning, "leaving an attached chat leaves the node running")
        await tmux.type("alice", "stty -a | tr ' ;' '\\n\\n' | grep -x -e echo -e icanon | sort | tr '\\n' ' '; echo END")
        await tmux.waitFor("alice", "echo and icanon restored") { $0.contains("echo icanon END") }
        await tmux.type("bob", "/quit")
        await tmux.waitFor("bob", contains: "chat exited 0")
    }
}
