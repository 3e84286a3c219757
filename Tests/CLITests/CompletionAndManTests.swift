import Foundation
import TestSupport
import Testing

@testable import ParleyCLI

/// `parley completion SHELL` and `parley man` are generated from the command registry: every
/// command and option is in them, each script completes in its real shell (bash, fish's
/// `complete -C`, an interactive zsh in tmux), and the man page renders in groff without a warning.
@Suite(.onCommandThreads) struct CompletionAndManTests {
    /// Every command with the options a user may type after it (hidden ones excluded).
    static var commandOptions: [(name: String, options: [String])] {
        CommandRegistry.commands.map { command in
            (command.name, CompletionScript.options(for: command).map { "--" + $0.name })
        }
    }

    // MARK: man

    @Test func man_hasEveryCommandAndOptionInItsSection() throws {
        try withSandbox { sandbox in
            let run = sandbox.parleyRaw(["man"])
            expectSuccess(run)
            let page = run.stdout
            for heading in [
                ".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION", ".SH GLOBAL OPTIONS", ".SH COMMANDS", ".SH ENVIRONMENT", ".SH FILES",
                ".SH EXIT STATUS", ".SH SEE ALSO",
            ] {
                #expect(page.contains("\n" + heading + "\n"), "\(heading) missing")
            }
            let sections = page.components(separatedBy: "\n.SS ")
            for (name, options) in Self.commandOptions {
                let section = sections.first { $0.hasPrefix("\"parley \(ManPage.escaped(name))\"\n") }
                #expect(section != nil, "no section for \(name)")
                let globals = Set(CompletionScript.globalOptions.map { "--" + $0.name })
                for option in options where !globals.contains(option) {
                    #expect(section?.contains("\\fB" + ManPage.escaped(option) + "\\fR") == true, "\(option) missing in the section of \(name)")
                }
            }
            for option in CompletionScript.globalOptions {
                #expect(page.contains("\\fB" + ManPage.escaped("--" + option.name) + "\\fR"))
            }
            for variable in ["PARLEY_DATA_DIR", "PARLEY_PASSPHRASE", "PARLEY_BROADCAST", "PARLEY_CLOCK_SKEW_MS", "XDG_DATA_HOME"] {
                #expect(page.contains(variable))
            }
            // No line reads as a request by accident, and no bare hyphen or backslash is left.
            for line in page.split(separator: "\n") where !line.hasPrefix(".") {
                #expect(!line.hasPrefix("'"), "\(line)")
            }
        }
    }

    @Test func man_rendersWithoutWarnings() throws {
        try withSandbox { sandbox in
            let run = sandbox.parleyRaw(["man"])
            expectSuccess(run)
            let path = sandbox.write("parley.1", run.stdout)
            let groff = Tool.run("/usr/bin/groff", ["-man", "-Tutf8", "-ww", "-P-cbou", path], in: sandbox.root)
            #expect(groff.status == 0 && groff.stderr.isEmpty, "groff: \(groff.stderr)")
            #expect(groff.stdout.contains("COMMANDS") && groff.stdout.contains("EXIT STATUS"))
            let man = Tool.run("/usr/bin/man", ["-l", path], in: sandbox.root, environment: ["MANPAGER": "cat", "MANWIDTH": "80"])
            #expect(man.status == 0 && man.stderr.isEmpty, "man -l: \(man.stderr)")
            #expect(man.stdout.contains("parley send"))
        }
    }

    // MARK: completion scripts

    @Test(arguments: CompletionCommand.shells)
    func completionScript_hasEveryCommandAndOption(shell: String) throws {
        try withSandbox { sandbox in
            let run = sandbox.parleyRaw(["completion", shell])
            expectSuccess(run)
            let script = run.stdout
            let words = Set(script.split { !($0.isLetter || $0 == "-") }.map(String.init))
            for word in CompletionScript.firstWords { #expect(words.contains(word), "\(word) missing in the \(shell) script") }
            for group in CommandRegistry.groups {
                for word in CompletionScript.subcommands(of: group) { #expect(words.contains(word), "\(group) \(word) missing") }
            }
            let lines = script.split(separator: "\n").map(String.init)
            let globals = Set(CompletionScript.globalOptions.map { "--" + $0.name })
            for (name, options) in Self.commandOptions {
                // bash and zsh list a command's options on one line; fish has a line per option.
                let listed = lines.first { $0.contains(shell == "bash" ? "\"\(name)\") echo \"" : "\"\(name)\") candidates=(") }
                let listedWords = Set((listed ?? "").split { $0 == " " || $0 == "\"" || $0 == "(" || $0 == ")" }.map(String.init))
                for option in options {
                    if shell == "fish" {
                        let found = script.contains("= \\'\(name)\\'' -l \(option.dropFirst(2)) ") || globals.contains(option)
                        #expect(found, "\(option) of \(name) missing in the fish script")
                    } else {
                        #expect(listedWords.contains(option), "\(option) of \(name) missing in the \(shell) script")
                    }
                }
            }
            for option in CompletionScript.globalOptions {
                #expect(script.contains(shell == "fish" ? "-l \(option.name) " : "--\(option.name)"), "global --\(option.name) missing")
            }
            // The hidden query is offered nowhere: it is for the scripts, not for people.
            #expect(!lines.contains { $0.contains("\"completion\")") && $0.contains("--list") }, "--list offered in \(shell)")
            #expect(!script.contains("-l list "), "--list offered in \(shell)")
        }
    }

    @Test func completion_unknownShellIsAUsageError() throws {
        try withSandbox { sandbox in
            expectError(sandbox.parleyRaw(["completion", "tcsh"]), exitCode: 2, "choose bash, zsh or fish")
            expectError(sandbox.parleyRaw(["completion"]), exitCode: 2, "missing SHELL")
            let help = sandbox.parleyRaw(["completion", "--help"])
            expectSuccess(help)
            #expect(help.stdout.contains("source <(parley completion bash)"))
            #expect(!help.stdout.contains("--list"))
        }
    }

    @Test func listRooms_isQuietWithoutData() throws {
        try withSandbox { sandbox in
            for arguments in [["completion", "--list", "rooms"], ["completion", "--list", "conversations"], ["completion", "--list", "nonsense"]] {
                let run = sandbox.parley(arguments[0], arguments[1], arguments[2])
                expectSuccess(run)
                #expect(run.stdout.isEmpty, "\(run)")
            }
            let file = sandbox.write("file", "x")
            let blocked = sandbox.parleyRaw(["--data-dir", file, "completion", "--list", "rooms"])
            expectSuccess(blocked)
            #expect(blocked.stdout.isEmpty)
            #expect(!FileManager.default.fileExists(atPath: sandbox.dataDir), "listing created the data directory")
        }
    }

    /// Joins `lobby` and `Dev`, and `left` then leaves it: completion offers `dev` and `lobby`.
    private func joinRooms(_ sandbox: Sandbox) {
        sandbox.initialize()
        for room in ["lobby", "Dev"] { expectSuccess(sandbox.parley("join", room)) }
        expectSuccess(sandbox.parley("join", "left"))
        expectSuccess(sandbox.parley("leave", "left"))
    }

    /// The directory of the parley under test, first on the shells' PATH.
    private var binaryDirectory: String {
        URL(fileURLWithPath: ParleyBinary.path ?? "/").deletingLastPathComponent().path
    }

    @Test func bash_completesCommandsOptionsAndRooms() throws {
        try withSandbox { sandbox in
            joinRooms(sandbox)
            let script = sandbox.parleyRaw(["completion", "bash"])
            expectSuccess(script)
            let path = sandbox.write("parley.bash", script.stdout)
            let syntax = Tool.run("/usr/bin/bash", ["-n", path], in: sandbox.root)
            #expect(syntax.status == 0 && syntax.stderr.isEmpty, "bash -n: \(syntax.stderr)")

            func complete(_ words: [String]) -> [String] {
                let quoted = words.map { "'" + $0 + "'" }.joined(separator: " ")
                let driver = """
                    cd '\(sandbox.root)'
                    source '\(path)'
                    COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1)
                    _parley
                    printf '%s\\n' "${COMPREPLY[@]}"
                    """
                let result = Tool.run(
                    "/usr/bin/bash", ["--noprofile", "--norc", "-c", driver], in: sandbox.root,
                    environment: ["PATH": binaryDirectory + ":/usr/bin:/bin", "PARLEY_DATA_DIR": sandbox.dataDir, "HOME": sandbox.root])
                #expect(result.status == 0 && result.stderr.isEmpty, "bash: \(result.stderr)")
                return result.stdout.split(separator: "\n").map(String.init).filter { !$0.isEmpty }.sorted()
            }
            #expect(complete(["parley", "se"]) == CompletionScript.firstWords.filter { $0.hasPrefix("se") }.sorted())
            #expect(complete(["parley", "se"]).contains("send"))
            #expect(complete(["parley", "task", "a"]) == ["add"])
            let history = try #require(CommandRegistry.command(named: "history"))
            let expected = CompletionScript.options(for: history).map { "--" + $0.name }.filter { $0.hasPrefix("--r") }.sorted()
            #expect(expected.contains("--room"))
            #expect(complete(["parley", "history", "--r"]) == expected)
            #expect(complete(["parley", "--data"]) == ["--data-dir"])
            #expect(complete(["parley", "send", "--room", ""]) == ["dev", "lobby"])
            #expect(complete(["parley", "send", "--room", "l"]) == ["lobby"])
            #expect(complete(["parley", "send", "--room", "lobby", "--json", "--room", ""]) == ["dev", "lobby"])
            // The data directory typed on the line wins over the environment's.
            #expect(complete(["parley", "--data-dir", sandbox.root + "/nowhere", "send", "--room", ""]) == [])
            #expect(complete(["parley", "send", "--data-dir", sandbox.dataDir, "--room", ""]) == ["dev", "lobby"])
            #expect(complete(["parley", "send", "--status", ""]) == [])

            // Conversations are offered by the short id `parley conversations` shows.
            let bob = sandbox.parleyRaw(["--data-dir", sandbox.root + "/bob", "init", "--nick", "bob"])
            expectSuccess(bob)
            let created = sandbox.parley("conversation", "create", "--name", "pair", "--members", bob.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            expectSuccess(created)
            let short = String(created.stdout.prefix(10))
            #expect(complete(["parley", "history", "--conversation", ""]) == [short])
            #expect(complete(["parley", "send", "--room", ""]) == ["dev", "lobby"])

            // People are offered as nick#short after --members, yourself left out (bob's profile
            // comes in an export, as it would from a peer).
            expectSuccess(sandbox.parleyRaw(["--data-dir", sandbox.root + "/bob", "export", "--out", sandbox.root + "/bob.parley"]))
            expectSuccess(sandbox.parley("import", sandbox.root + "/bob.parley"))
            let bobShort = String(bob.stdout.trimmingCharacters(in: .whitespacesAndNewlines).prefix(6))
            #expect(complete(["parley", "conversation", "create", "--members", ""]) == ["bob#\(bobShort)"])

            // Names come from peers: a room named to run a command is offered quoted for the
            // command line, and nothing runs while completing.
            expectSuccess(sandbox.parley("join", "$({touch,pwned})"))
            #expect(complete(["parley", "send", "--room", "$"]) == ["\\$\\(\\{touch\\,pwned\\}\\)"])
            #expect(complete(["parley", "send", "--room", ""]).contains("lobby"))
            #expect(!FileManager.default.fileExists(atPath: sandbox.root + "/pwned"), "completion ran a room's name as a command")
        }
    }
}

extension CompletionAndManTests {
    /// fish's own completion engine (`complete -C`) over the generated script.
    @Test func fish_completesCommandsOptionsAndRooms() throws {
        try withSandbox { sandbox in
            joinRooms(sandbox)
            let script = sandbox.parleyRaw(["completion", "fish"])
            expectSuccess(script)
            let path = sandbox.write("parley.fish", script.stdout)
            func complete(_ line: String) -> [String] {
                let driver = "source '\(path)'; complete -C '\(line)'"
                let result = Tool.run(
                    "/usr/bin/fish", ["--no-config", "-c", driver], in: sandbox.root,
                    environment: ["PATH": binaryDirectory + ":/usr/bin:/bin", "PARLEY_DATA_DIR": sandbox.dataDir, "HOME": sandbox.root])
                #expect(result.status == 0 && result.stderr.isEmpty, "fish: \(result.stderr)")
                // Each candidate is `word<TAB>description`.
                return result.stdout.split(separator: "\n").map { String($0.prefix { $0 != "\t" }) }.sorted()
            }
            #expect(complete("parley se") == CompletionScript.firstWords.filter { $0.hasPrefix("se") }.sorted())
            #expect(complete("parley task a") == ["add"])
            #expect(complete("parley history --r") == ["--room"])
            // Only the joined rooms: no file names after an option whose value is a room.
            #expect(complete("parley send --room ") == ["dev", "lobby"])
            #expect(complete("parley send --room l") == ["lobby"])
            #expect(complete("parley --data-dir \(sandbox.root)/nowhere send --room ") == [])
            #expect(complete("parley task set --status ").isEmpty)
            let bob = sandbox.parleyRaw(["--data-dir", sandbox.root + "/bob", "init", "--nick", "bob"])
            expectSuccess(bob)
            expectSuccess(sandbox.parleyRaw(["--data-dir", sandbox.root + "/bob", "export", "--out", sandbox.root + "/bob.parley"]))
            expectSuccess(sandbox.parley("import", sandbox.root + "/bob.parley"))
            #expect(complete("parley conversation create --members ") == ["bob#" + String(bob.stdout.prefix(6))])
        }
    }

    /// zsh's completion system, driven as a person would: a real interactive zsh in tmux, the
    /// script in `$fpath`, `compinit`, and Tab.
    @Test func zsh_completesCommandsOptionsAndRooms() async throws {
        try await withSandbox { sandbox in
            joinRooms(sandbox)
            let script = sandbox.parleyRaw(["completion", "zsh"])
            expectSuccess(script)
            let functions = sandbox.root + "/functions"
            try FileManager.default.createDirectory(atPath: functions, withIntermediateDirectories: true)
            try script.stdout.write(toFile: functions + "/_parley", atomically: true, encoding: .utf8)
            _ = sandbox.write(
                ".zshrc",
                """
                PS1='> '
                fpath=('\(functions)' $fpath)
                autoload -U compinit && compinit -u -D
                """)
            let zsh = ZshInTmux(sandbox: sandbox, path: binaryDirectory + ":/usr/bin:/bin")
            let started = await zsh.start()
            #expect(started, "zsh did not show its prompt")
            if started {
                #expect(await zsh.complete("parley sen") == "> parley send")
                #expect(await zsh.complete("parley history --ro") == "> parley history --room")
                #expect(await zsh.complete("parley send --room l") == "> parley send --room lobby")
                #expect(await zsh.complete("parley send --room d") == "> parley send --room dev")
                #expect(await zsh.complete("parley send --room x") == "> parley send --room x", "no joined room starts with x")
            }
            await zsh.stop()
        }
    }
}

/// An interactive zsh in a private tmux server, for typing a line and pressing Tab. tmux runs
/// through `CompletedProcess` (TestSupport), which reaps a client whose server stays behind.
private struct ZshInTmux {
    let sandbox: Sandbox
    let path: String
    var socket: String { sandbox.root + "/tmux.sock" }

    @discardableResult
    private func tmux(_ arguments: [String]) async -> CompletedProcess {
        await CompletedProcess.run(
            "/usr/bin/tmux", ["-S", socket, "-f", "/dev/null"] + arguments, environment: ["HOME": sandbox.root],
            captureIn: sandbox.root, timeout: .seconds(10))
    }

    /// The screen's first line, trailing spaces dropped.
    private func firstLine() async -> String {
        let screen = await tmux(["capture-pane", "-p", "-t", "zsh"]).stdout
        let line = screen.split(separator: "\n", omittingEmptySubsequences: false).first ?? ""
        return String(line.reversed().drop { $0 == " " }.reversed())
    }

    /// Polls the first line until `accept` takes it or a deadline passes; returns the last seen.
    private func waitForFirstLine(_ accept: (String) -> Bool) async -> String {
        let deadline = Date().addingTimeInterval(ParleyBinary.timeout)
        var line = await firstLine()
        while !accept(line), Date() < deadline {
            try? await Task.sleep(for: .milliseconds(50))
            line = await firstLine()
        }
        return line
    }

    func start() async -> Bool {
        let shell =
            "env -i PATH='\(path)' HOME='\(sandbox.root)' ZDOTDIR='\(sandbox.root)' "
            + "PARLEY_DATA_DIR='\(sandbox.dataDir)' TERM=screen zsh -i"
        guard await tmux(["new-session", "-d", "-s", "zsh", "-x", "150", "-y", "20", shell]).exitCode == 0 else { return false }
        return await waitForFirstLine { $0 == ">" } == ">"
    }

    /// Types `line` and Tab and returns the first line once zsh has handled the Tab (a marker
    /// typed after it appears: keys are handled in order), marker and trailing spaces dropped;
    /// then clears the line.
    func complete(_ line: String) async -> String {
        await tmux(["send-keys", "-t", "zsh", "-l", line])
        let typed = await waitForFirstLine { $0 == "> " + line }
        guard typed == "> " + line else { return typed }
        await tmux(["send-keys", "-t", "zsh", "Tab"])
        await tmux(["send-keys", "-t", "zsh", "-l", "#"])
        var completed = await waitForFirstLine { $0.hasSuffix("#") }
        await tmux(["send-keys", "-t", "zsh", "C-u"])
        _ = await waitForFirstLine { $0 == ">" }
        if completed.hasSuffix("#") { completed.removeLast() }
        return String(completed.reversed().drop { $0 == " " }.reversed())
    }

    func stop() async { await tmux(["kill-server"]) }
}

/// Runs a program other than parley (bash, groff, man) with its output captured in files.
enum Tool {
    typealias Result = CapturedRun

    static func run(_ program: String, _ arguments: [String], in directory: String, environment: [String: String] = [:]) -> Result {
        var run = CapturedRun.run(program, arguments, home: directory, environment: environment, timeout: ParleyBinary.timeout)
        if let problem = run.problem { run.stderr = problem }
        if run.timedOut { run.stderr = "\(program) did not finish within \(Int(ParleyBinary.timeout)) s; killed it" }
        if run.timedOut || run.problem != nil { run.status = -1 }
        return run
    }
}
