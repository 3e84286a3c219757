import Presentation

/// The help texts, rendered from what each command declares (its usage, options, details and
/// examples live in the command's own type).
enum HelpText {
    /// `parley --help`: every command with its summary, the global options and the environment.
    static func overview() -> String {
        let width = CommandRegistry.commands.map(\.name.count).max() ?? 10
        var lines = [
            "parley \(ParleyCommandLine.version) — a serverless chat node for local networks",
            "",
            "Usage: parley [--data-dir DIR] [--passphrase-file FILE] COMMAND [OPTIONS] [ARGUMENTS]",
            "",
            "Commands:",
        ]
        for command in CommandRegistry.commands {
            lines.append("  " + padded(command.name, width) + "  " + command.summary)
        }
        lines += [
            "",
            "Global options (before or after the command):",
            "  --data-dir DIR          where Parley keeps identity.key and parley.db",
            "  --passphrase-file FILE  read the passphrase of a protected key from FILE",
            "  -h, --help              show help; `parley COMMAND --help` shows a command's",
            "  --version               print the version",
            "",
            "Environment:",
        ]
        for variable in environment {
            lines.append("  " + padded(variable.name, 17) + "  " + variable.lines[0])
            lines += variable.lines.dropFirst().map { String(repeating: " ", count: 21) + $0 }
        }
        lines += [""] + notes + ["Exit status: " + exitStatus + ".", "", "Start with:  " + start]
        return lines.joined(separator: "\n")
    }

    /// The environment variables parley reads, each with its explanation as help prints it
    /// (the man page joins the lines).
    static let environment: [(name: String, lines: [String])] = [
        ("PARLEY_DATA_DIR", ["the data directory when --data-dir is not given"]),
        ("XDG_DATA_HOME", ["otherwise the data directory is $XDG_DATA_HOME/parley,", "or ~/.local/share/parley when it is not set"]),
        ("PARLEY_PASSPHRASE", ["the passphrase of a protected key (--passphrase-file wins)"]),
        ("PARLEY_BROADCAST", ["where `run` and `chat` send beacons when --broadcast is not given"]),
        (
            "PARLEY_CLOCK_SKEW_MS",
            ["milliseconds added to the clock that stamps every op a", "command writes (a test of clocks off; --clock-skew-ms wins)"]
        ),
    ]

    /// What holds for every command, for `parley --help` and the man page's DESCRIPTION.
    static let notes = [
        "Rooms may be written with or without '#': `lobby` and `#Lobby` are one room.",
        "Message and task ids are 52 characters; a unique prefix of 8 or more also works.",
        "Read commands take --json and print one JSON array of objects.",
    ]

    static let exitStatus = "0 success, 1 failure, 2 usage error"
    static let start = "parley init --nick alice   then   parley send --room lobby hello"

    /// `parley COMMAND --help`: usage, options, details and examples of one command.
    static func command(_ command: any Command) -> String {
        var lines = ["parley \(command.name) — \(command.summary)", "", "Usage:"]
        lines += command.usage.map { "  parley \($0)" }
        if !command.options.isEmpty {
            lines += ["", "Options:"]
            lines += optionLines(command.options)
        }
        if !command.advancedOptions.isEmpty {
            lines += ["", "Advanced options (tests and the lab; times in milliseconds):"]
            lines += optionLines(command.advancedOptions)
        }
        for paragraph in command.details {
            lines += [""] + wrapped(paragraph)
        }
        if !command.examples.isEmpty {
            lines += ["", command.examples.count == 1 ? "Example:" : "Examples:"]
            lines += command.examples.map { "  parley \($0)" }
        }
        let globals = GlobalOptions.all.filter { global in !command.options.contains { $0.name == global.name } }
        lines += ["", "Global options " + globals.map(\.synopsis).joined(separator: " and ") + " apply too; see `parley --help`."]
        return lines.joined(separator: "\n")
    }

    /// `parley task --help`: the subcommands of a group.
    static func group(_ group: String) -> String {
        let members = CommandRegistry.members(of: group)
        var lines = ["parley \(group) — subcommands:", ""]
        for member in members {
            lines.append("  parley \(member.usage.first ?? member.name)")
            lines.append("      \(member.summary)")
        }
        lines += ["", "Run `parley \(group) SUBCOMMAND --help` for one subcommand's options and an example."]
        return lines.joined(separator: "\n")
    }

    private static func optionLines(_ options: [OptionSpec]) -> [String] {
        let width = max(18, options.map(\.synopsis.count).max() ?? 0)
        return options.map { "  " + padded($0.synopsis, width) + "  " + $0.help }
    }

    /// The width help paragraphs are wrapped to: readable in an 80-100 column terminal.
    static let width = 88

    /// `paragraph` broken into lines of at most `width` characters at spaces.
    static func wrapped(_ paragraph: String) -> [String] {
        var lines: [String] = []
        var current = ""
        for word in paragraph.split(separator: " ") {
            if !current.isEmpty && current.count + 1 + word.count > width {
                lines.append(current)
                current = ""
            }
            current += (current.isEmpty ? "" : " ") + word
        }
        if !current.isEmpty { lines.append(current) }
        return lines
    }

    static func padded(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}
