import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A private tmux server (its own socket name, no config file) running `parley chat` sessions,
/// driven by `send-keys` and read by `capture-pane`. Every wait polls with a deadline.
///
/// Call `shutDown()` in a `defer`: it kills the server and with it every chat it runs.
final class Tmux: Sendable {
    static let executable = ["/usr/bin/tmux", "/bin/tmux", "/usr/local/bin/tmux"].first { FileManager.default.isExecutableFile(atPath: $0) }

    let socket = "parley-chat-test-\(getpid())-\(UUID().uuidString.prefix(8))"
    let directory: String

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-chat-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    /// Runs `tmux -L socket -f /dev/null arguments`.
    @discardableResult
    func run(_ arguments: [String]) async -> CompletedProcess {
        await CompletedProcess.run(
            Self.executable ?? "/usr/bin/tmux", ["-L", socket, "-f", "/dev/null"] + arguments,
            environment: ["HOME": directory, "TERM": "screen"], captureIn: directory, timeout: .seconds(10))
    }

    /// Starts session `name` (width × height) running `parley --data-dir DIR chat ARGS` in a
    /// shell that reports the exit status and then stays at a prompt (so a test can check the
    /// terminal is usable after the chat left).
    func startChat(_ name: String, dataDirectory: String, arguments: [String], width: Int = 80, height: Int = 24) async throws {
        let parley = try #require(ParleyExecutable.path, Comment(rawValue: ParleyExecutable.notFoundMessage))
        let script = directory + "/\(name).sh"
        let quoted = ([parley, "--data-dir", dataDirectory, "chat"] + arguments).map { "'\($0)'" }.joined(separator: " ")
        try """
        #!/bin/sh
        export LANG=C.UTF-8 TERM=screen HOME='\(directory)' PS1='$ '
        unset PARLEY_BROADCAST PARLEY_DATA_DIR
        # Ctrl-C is for the chat: the shell survives it (the chat gets the default disposition).
        trap 'true' INT
        \(quoted)
        echo "chat exited $?"
        exec sh
        """.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        let result = await run(["new-session", "-d", "-s", name, "-x", "\(width)", "-y", "\(height)", script])
        #expect(result.exitCode == 0, "tmux new-session failed: \(result)")
    }

    /// Types `text` literally (no key names), then Enter when `enter`.
    func type(_ session: String, _ text: String, enter: Bool = true) async {
        await run(["send-keys", "-t", session, "-l", text])
        if enter { await run(["send-keys", "-t", session, "Enter"]) }
    }

    /// Presses keys by tmux name (`PPage`, `C-n`, `Enter`).
    func press(_ session: String, _ keys: String...) async {
        await run(["send-keys", "-t", session] + keys)
    }

    /// The visible screen of `session`, one line per row.
    func screen(_ session: String) async -> String {
        await run(["capture-pane", "-p", "-t", session]).stdout
    }

    /// A `#{format}` of the pane (`pane_title`, `pane_width`).
    func format(_ session: String, _ format: String) async -> String {
        await run(["display-message", "-p", "-t", session, format]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Waits until `session`'s screen satisfies `condition`; records an issue (with the screen)
    /// and returns nil after `timeout`.
    @discardableResult
    func waitFor(
        _ session: String, _ what: String, timeout: Duration = .seconds(30), sourceLocation: SourceLocation = #_sourceLocation,
        _ condition: (String) -> Bool
    ) async -> String? {
        let deadline = ContinuousClock.now + timeout
        var last = ""
        while ContinuousClock.now < deadline {
            last = await screen(session)
            if condition(last) { return last }
            try? await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("timed out waiting for \(what) in session \(session); the screen:\n\(last)", sourceLocation: sourceLocation)
        return nil
    }

    /// Waits until the screen contains `text`.
    @discardableResult
    func waitFor(
        _ session: String, contains text: String, timeout: Duration = .seconds(30), sourceLocation: SourceLocation = #_sourceLocation
    ) async -> String? {
        await waitFor(session, "'\(text)'", timeout: timeout, sourceLocation: sourceLocation) { $0.contains(text) }
    }

    /// Copies everything `session`'s program writes to the terminal into a file, from now on
    /// (`pipe-pane`): what the screen cannot show, such as the bell.
    func recordOutput(_ session: String) async {
        await run(["pipe-pane", "-o", "-t", session, "cat >> '\(directory)/\(session).output'"])
    }

    /// How many times `session`'s program rang the bell (BEL bytes) since `recordOutput`.
    func bells(_ session: String) -> Int {
        let bytes = FileManager.default.contents(atPath: "\(directory)/\(session).output") ?? Data()
        return bytes.reduce(0) { $0 + ($1 == 0x07 ? 1 : 0) }
    }

    /// Waits until `session` rang the bell `count` times in all; records an issue after `timeout`.
    func waitForBells(_ session: String, _ count: Int, timeout: Duration = .seconds(20), sourceLocation: SourceLocation = #_sourceLocation) async {
        let deadline = ContinuousClock.now + timeout
        while bells(session) < count && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(100)) }
        #expect(bells(session) == count, "bells rung", sourceLocation: sourceLocation)
    }

    /// Creates `nick` in a fresh data directory `name` and starts `parley run` there with
    /// `options`; returns the directory and the node once it answers `parley status`. Kill the
    /// node in a `defer`.
    func startNode(_ name: String, nick: String, options: [String]) async throws -> (directory: String, node: ChildProcess) {
        let parley = try #require(ParleyExecutable.path, Comment(rawValue: ParleyExecutable.notFoundMessage))
        let dataDirectory = try self.dataDirectory(name)
        let environment = ["HOME": directory]
        let initialized = await CompletedProcess.run(
            parley, ["--data-dir", dataDirectory, "init", "--nick", nick], environment: environment, captureIn: directory)
        try #require(initialized.exitCode == 0, "\(initialized)")
        let node = try ChildProcess(
            executable: parley, arguments: ["--data-dir", dataDirectory, "run"] + options, environment: environment, captureIn: directory,
            name: "\(name)-node")
        let deadline = ContinuousClock.now + .seconds(20)
        var status = await CompletedProcess.run(parley, ["--data-dir", dataDirectory, "status"], environment: environment, captureIn: directory)
        while status.exitCode != 0 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            status = await CompletedProcess.run(parley, ["--data-dir", dataDirectory, "status"], environment: environment, captureIn: directory)
        }
        if status.exitCode != 0 { node.kill() }
        try #require(status.exitCode == 0, "the node never answered: \(status)\n\(node.stderr)")
        return (dataDirectory, node)
    }

    /// A fresh data directory inside the test's directory.
    func dataDirectory(_ name: String) throws -> String {
        let path = directory + "/" + name
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Kills the server (and every chat in it) and removes the directory. Synchronous, for `defer`.
    func shutDown() {
        if let executable = Self.executable,
            let child = try? ChildProcess(
                executable: executable, arguments: ["-L", socket, "-f", "/dev/null", "kill-server"], environment: ["HOME": directory],
                captureIn: directory, name: "kill-server")
        {
            let deadline = ContinuousClock.now + .seconds(5)
            while child.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
            child.kill()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The options that keep a chat's node on loopback and among this test's nodes: loopback
    /// broadcast on a discovery port of this test (below 32768), links on an ephemeral loopback
    /// port, and a network secret of this test (nodes of other tests never talk to them).
    func nodeOptions(discoveryPort: Int) throws -> [String] {
        let secret = directory + "/network.secret"
        if !FileManager.default.fileExists(atPath: secret) { try UUID().uuidString.write(toFile: secret, atomically: true, encoding: .utf8) }
        return [
            "--listen", "127.0.0.1:0", "--broadcast", "127.255.255.255", "--discovery-port", "\(discoveryPort)", "--network-secret-file", secret,
        ]
    }

    /// A discovery port for this process and `slot`, in 20000..<32000.
    static func discoveryPort(slot: Int) -> Int {
        20000 + Int(getpid() % 2000) * 6 + slot
    }
}
