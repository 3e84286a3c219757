/// A problem to report to the person at the terminal: one line on stderr and an exit status.
///
/// Every error a command meets ends as one of these (see `ErrorReport`), so nothing else — no
/// Swift error dump, no stack trace — ever reaches a user. Messages follow the
/// `<problem>; <fix>` style and are printed as `parley: <message>`.
public enum CLIError: Error, Equatable, Sendable {
    /// The command line is wrong: unknown command or option, missing argument, bad value.
    /// Exit status 2. `command` names the command whose `--help` would have helped (nil for the
    /// command line as a whole).
    case usage(String, command: String?)
    /// The command line was fine but the command could not do its job: no identity, unknown
    /// room, message not found, damaged database... Exit status 1.
    case failure(String)

    /// The process exit status for this error.
    public var exitCode: Int32 {
        switch self {
        case .usage: 2
        case .failure: 1
        }
    }

    /// The single line printed on stderr, `parley: ` included. Newlines inside a message (an
    /// SQLite message quoting a multi-line statement) are folded so it stays one line.
    public var line: String {
        let text: String
        switch self {
        case .usage(let message, let command):
            let help = command.map { "`parley \($0) --help`" } ?? "`parley --help`"
            text = "\(message); see \(help)"
        case .failure(let message):
            text = message
        }
        return "parley: " + Self.oneLine(text)
    }

    /// `text` with every run of line breaks and tabs replaced by one space.
    static func oneLine(_ text: String) -> String {
        var result = ""
        var pendingSpace = false
        for character in text {
            if character.isNewline || character == "\t" {
                pendingSpace = true
                continue
            }
            if pendingSpace {
                if result.last != " " && character != " " { result.append(" ") }
                pendingSpace = false
            }
            result.append(character)
        }
        return result
    }
}
