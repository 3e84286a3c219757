/// The manual page parley(1) in man(7) troff, rendered from the declarations `--help` is
/// rendered from (`CommandRegistry`, `GlobalOptions`, `HelpText`), so the two cannot disagree.
enum ManPage {
    static func render() -> String {
        var lines = [
            ".TH PARLEY 1 \"\" \"parley \(ParleyCommandLine.version)\" \"User Commands\"",
            ".nh",
            ".ad l",
            ".SH NAME",
            "parley \\- a serverless chat node for local networks",
            ".SH SYNOPSIS",
            ".B parley",
            "[" + bold("--data-dir") + " " + italic("DIR") + "] [" + bold("--passphrase-file") + " " + italic("FILE") + "] "
                + italic("COMMAND") + " [" + italic("OPTIONS") + "] [" + italic("ARGUMENTS") + "]",
            ".br",
            ".B parley \\-\\-help",
            ".SH DESCRIPTION",
            text(
                "Parley is a chat node for local networks without a server: nodes find each other on the LAN, link, and sync "
                    + "the rooms and private conversations their users joined. Each command below reads or writes the local "
                    + "store in the data directory; `parley run` is the node that syncs it with peers."),
        ]
        for note in HelpText.notes { lines += [".PP", text(note)] }
        lines += [".PP", text("Start with: " + HelpText.start)]
        lines += [".SH GLOBAL OPTIONS", text("These go before or after the command.")]
        for option in CompletionScript.globalOptions { lines += optionItem(option) }
        lines.append(".SH COMMANDS")
        for command in CommandRegistry.commands { lines += section(command) }
        lines += [".SH ENVIRONMENT"]
        for variable in HelpText.environment {
            lines += [".TP", bold(variable.name), text(variable.lines.joined(separator: " "))]
        }
        lines += [
            ".SH FILES",
            text(
                "The data directory is the --data-dir option, else $PARLEY_DATA_DIR, else $XDG_DATA_HOME/parley, else "
                    + "~/.local/share/parley. It holds:"),
            ".TP", bold("identity.key"), text("your identity's secret key (mode 0600); only `parley init` creates it"),
            ".TP", bold("parley.db"), text("the SQLite store of rooms, conversations, messages, tasks and profiles"),
            ".TP", bold("control.sock"), text("the running node's control socket (mode 0600), while `parley run` runs"),
            ".TP", bold("web.address"), text("where the running node's web UI listens, while `parley run` runs"),
            ".SH EXIT STATUS",
            text(HelpText.exitStatus + "."),
            ".SH SEE ALSO",
            text("parley COMMAND --help, and the project's docs/USAGE.md."),
        ]
        return lines.joined(separator: "\n")
    }

    /// One command's subsection: usage, summary, options, details and examples.
    private static func section(_ command: any Command) -> [String] {
        var lines = [".SS \"parley \(escaped(command.name))\"", ".nf"]
        lines += command.usage.map { text("parley " + $0) }
        lines += [".fi", ".PP", text(command.summary)]
        for option in command.options { lines += optionItem(option) }
        if !command.advancedOptions.isEmpty {
            lines += [".PP", text("Advanced options (tests and the lab; times in milliseconds):")]
            for option in command.advancedOptions { lines += optionItem(option) }
        }
        for paragraph in command.details { lines += [".PP", text(paragraph)] }
        if !command.examples.isEmpty {
            lines += [".PP", command.examples.count == 1 ? "Example:" : "Examples:", ".RS", ".nf"]
            lines += command.examples.map { text("parley " + $0) }
            lines += [".fi", ".RE"]
        }
        return lines
    }

    private static func optionItem(_ option: OptionSpec) -> [String] {
        let tag = bold("--" + option.name) + (option.valueName.map { " " + italic($0) } ?? "")
        return [".TP", tag, text(option.help)]
    }

    private static func bold(_ word: String) -> String { "\\fB" + escaped(word) + "\\fR" }
    private static func italic(_ word: String) -> String { "\\fI" + escaped(word) + "\\fR" }

    /// `line` as text lines: escaped, and kept from being read as a request when it starts
    /// with `.` or `'`.
    static func text(_ line: String) -> String {
        line.split(separator: "\n", omittingEmptySubsequences: false).map { part in
            let body = escaped(String(part))
            return body.hasPrefix(".") || body.hasPrefix("'") ? "\\&" + body : body
        }.joined(separator: "\n")
    }

    /// `text` with troff's specials made literal: `\` prints as `\e`, `-` as `\-` (a plain
    /// hyphen may be typeset as a dash, which breaks a copied option), and any character
    /// beyond ASCII as `\[uXXXX]`.
    static func escaped(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "\\": result += "\\e"
            case "-": result += "\\-"
            default:
                for scalar in character.unicodeScalars {
                    // troff reads bytes, not UTF-8: other characters go by their code point.
                    if scalar.isASCII {
                        result.unicodeScalars.append(scalar)
                    } else {
                        let hex = String(scalar.value, radix: 16, uppercase: true)
                        result += "\\[u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex + "]"
                    }
                }
            }
        }
        return result
    }
}
