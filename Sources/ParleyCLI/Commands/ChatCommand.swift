import Identity
import NodeRuntime
import Replica
import TerminalUI

/// `parley chat [ROOM]`: the terminal chat (docs/DESIGN.md §6.2), TinyChat in a terminal at the level of
/// irssi's basics. Attaches to the node running for the data directory, or runs one in this
/// process (configured by the same options as `parley run`) while the chat is open.
struct ChatCommand: Command {
    let name = "chat"
    let summary = "the terminal chat: rooms, private conversations and tasks, full screen"
    let usage = ["chat [ROOM] [run's options: --listen, --broadcast, --peers, --no-discovery, ...]"]
    var options: [OptionSpec] { RunCommand.nodeOptions }
    var advancedOptions: [OptionSpec] { RunCommand.nodeAdvancedOptions }
    let details = [
        "Opens ROOM (joined first if needed), else #lobby. The first start without an identity or nickname asks for a "
            + "nickname and creates the identity, as `parley init --nick` does.",
        "When a node runs for the data directory (`parley run`), the chat attaches to it; otherwise it starts one in this "
            + "process with the options `parley run` takes, logging to chat-node.log in the data directory, and stops it "
            + "gracefully on /quit.",
        "Type a message and press Enter. Commands: /join, /leave, /msg NICK, /conv new|add|remove|leave, /nick, /who, "
            + "/tasks, /task add|set|delete, /edit, /delete, /react, /read, /attach, /ids, /help, /quit. PgUp/PgDn scroll, "
            + "Ctrl-N/Ctrl-P switch between rooms and conversations, Tab completes a nickname (else goes to the next one), "
            + "Up/Down recall what you typed.",
    ]
    let examples = ["chat", "chat dev", "chat lobby --broadcast 127.255.255.255", "chat --no-discovery --peers ~/parley-peers.txt"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        if arguments.has(RunCommand.web) || arguments[RunCommand.webAllowRemote] {
            let option = arguments.has(RunCommand.web) ? RunCommand.web.spec.name : RunCommand.webAllowRemote.spec.name
            throw CLIError.usage(
                "--\(option): the node the chat starts serves no web UI; run `parley run` for the web UI and `parley chat` beside it", command: name)
        }
        try expectPositionals(arguments, 0...1, names: ["ROOM"])
        let room = try arguments.positionals.first.map { text throws(CLIError) in try context.roomName(text, command: name) }
        // Every option is checked before the terminal is taken, so usage errors print as usual.
        let level = try RunCommand.logLevel(arguments)
        let configuration = try RunCommand.nodeConfiguration(context, arguments, command: name)
        let capture = CapturedOutput()
        let chat = context.redirected(to: Output(capturing: capture.append))

        let stop = StopFlag()
        let signals = SignalWatcher { stop.set() }
        defer { signals.cancel() }
        let terminal: Terminal
        do {
            terminal = try Terminal()
        } catch {
            throw CLIError.failure(error.description)
        }
        // endwin on every way out: /quit, a signal, or an error thrown below (printed after it).
        defer { terminal.end() }

        // Every frame is laid out for the emoji sequences this terminal joins into one glyph.
        return try DisplayWidth.$emojiJoining.withValue(terminal.emojiJoining) {
            let recovery = try RunCommand.recoverFromFork(chat)
            guard let identity = try login(chat, terminal: terminal, stop: stop) else { return 0 }
            terminal.draw(ChatLayout.frame(ChatState(), width: terminal.size.width, height: terminal.size.height, clock: "starting…"))
            let node = try ChatNode.attachOrStart(chat, identity: identity, configuration: configuration, level: level)
            defer { node.stop() }
            let session = ChatSession(
                context: chat, capture: capture, identity: identity, node: node, terminal: terminal, stop: stop, configuration: configuration)
            session.run(opening: room, notice: recovery?.summary)
            return 0
        }
    }

    /// TinyChat's login screen when there is no identity or no nickname yet: asks for a nickname
    /// and sets up the identity as `init --nick` does. Nil when the user left (SIGINT, or Enter
    /// on nothing twice).
    private func login(_ context: Context, terminal: Terminal, stop: StopFlag) throws(CLIError) -> Identity? {
        if try context.dataDirectory().hasKeyFile {
            let identity = try context.identity()
            if let nick = try context.nick(of: identity.id), !nick.isEmpty { return identity }
        }
        var input = LineEditor()
        var problem: String?
        while !stop.isSet {
            terminal.draw(ChatLayout.loginFrame(input, problem: problem, width: terminal.size.width, height: terminal.size.height))
            guard let key = terminal.readKey(timeoutMilliseconds: 100) else { continue }
            if key == .resize { terminal.invalidate() }
            guard case .submitted(let text) = input.handle(key) else { continue }
            guard !text.trimmingWhitespace().isEmpty else {
                problem = "type a nickname, then press Enter"
                continue
            }
            do {
                let nick = try Lookup.nickname(text, option: "nick", command: name)
                return try context.setUpIdentity(nick: nick, command: name).identity
            } catch {
                if case .usage(let message, _) = error { problem = message } else { throw error }
            }
        }
        return nil
    }
}
