import Foundation
import Presentation
import Replica
import Store

/// `parley completion SHELL`: a completion script generated from the command registry, so it
/// offers exactly the commands and options `--help` lists.
struct CompletionCommand: Command {
    let name = "completion"
    let summary = "print a shell completion script for bash, zsh or fish"
    let usage = [
        "completion bash    (load it now: source <(parley completion bash))",
        "completion zsh     (e.g. parley completion zsh > \"${fpath[1]}/_parley\")",
        "completion fish    (e.g. parley completion fish > ~/.config/fish/completions/parley.fish)",
    ]
    let options: [OptionSpec] = []
    /// `--list rooms`, `--list conversations`: the scripts' query for the rooms and the
    /// conversations you joined, one per line.
    static let list = Option.value("list", "KIND", "print completion candidates of KIND (rooms, conversations, people), one a line")
    let hiddenOptions = [Self.list.spec]
    let details = [
        "The script completes command names, each command's options and the global options, and offers the rooms you "
            + "joined after --room, the short ids of your conversations after --conversation, and people as nick#xxxxxx after --members. For bash, put `source <(parley completion bash)` in ~/.bashrc, or save the script as "
            + "~/.local/share/bash-completion/completions/parley. For zsh, save it as _parley in a directory of $fpath "
            + "(before compinit runs). For fish, save it as ~/.config/fish/completions/parley.fish.",
        "To list them the script runs parley, which reads the store without changing it, prints nothing when there is "
            + "no data directory yet, and never writes to the terminal's error output.",
    ]
    let examples = ["completion bash", "completion zsh > ~/.zsh/completions/_parley"]

    /// The shells a script exists for.
    static let shells = ["bash", "zsh", "fish"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        if let kind = try arguments.value(Self.list) {
            // Completion must never print into the user's shell: every problem is silence and 0.
            guard arguments.positionals.isEmpty else { return 0 }
            for candidate in Self.candidates(kind, context: context) { context.output.line(candidate) }
            return 0
        }
        try expectPositionals(arguments, 1...1, names: ["SHELL (bash, zsh or fish)"])
        let shell = arguments.positionals[0]
        switch shell {
        case "bash": context.output.line(CompletionScript.bash())
        case "zsh": context.output.line(CompletionScript.zsh())
        case "fish": context.output.line(CompletionScript.fish())
        default: throw CLIError.usage("no completion script for '\(shell)'; choose bash, zsh or fish", command: name)
        }
        return 0
    }

    /// The candidates of `kind`, read from the store opened read-only; empty when there is no
    /// data directory, no store, or anything at all goes wrong.
    static func candidates(_ kind: String, context: Context) -> [String] {
        guard ["rooms", "conversations", "people"].contains(kind), let directory = try? context.dataDirectory(),
            FileManager.default.fileExists(atPath: directory.databasePath),
            let key = try? context.storeKey(),
            let store = try? ReplicaStore(readOnlyPath: directory.databasePath, key: key),
            let records = try? store.log.partitions()
        else { return [] }
        if kind == "people" {
            // `nick#short`, as `--members` takes them: everyone in the directory with a nick but you.
            guard let me = try? context.me(), let people = try? store.directory.people(me: me) else { return [] }
            return people.compactMap { person in person.user == me ? nil : person.nick.map { "\($0)#\(person.user.short)" } }.sorted()
        }
        // Private rooms by the name they were joined under (kept locally, never sent).
        let privateRooms = kind == "rooms" ? ((try? store.privateRooms()) ?? []).filter { $0.successor == nil }.map(\.name.value) : []
        let joined = records.compactMap { record -> String? in
            guard record.joined else { return nil }
            switch record.descriptor {
            // Without '#': an unquoted word that starts with '#' is a comment to the shell.
            case .room(let name): return kind == "rooms" ? name.value : nil
            // The short id `parley conversations` shows; names are encrypted and need the key.
            case .conversation: return kind == "conversations" ? Format.shortID(record.id) : nil
            default: return nil
            }
        }
        return Set(privateRooms + joined).sorted()
    }
}

/// `parley man`: the manual page parley(1), generated from the same declarations as `--help`.
struct ManCommand: Command {
    let name = "man"
    let summary = "print the manual page parley(1) in troff format"
    let usage = ["man    (read it with: parley man | man -l -)"]
    let options: [OptionSpec] = []
    let details = [
        "The page has every command with its usage, options, details and examples, the global options, the "
            + "environment, the files and the exit status: the same text as --help. Install it with "
            + "`parley man > ~/.local/share/man/man1/parley.1`."
    ]
    let examples = ["man | man -l -"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        context.output.line(ManPage.render())
        return 0
    }
}
