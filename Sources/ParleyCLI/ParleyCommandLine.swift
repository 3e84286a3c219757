import Foundation
import Replica
import Wire

/// The `parley` program: reads the command line, finds the command, runs it, and turns every
/// outcome into an exit status — 0 success, 1 failure, 2 usage error (docs/DESIGN.md §6.1).
///
/// The executable's `main.swift` only calls `main()`; everything else is here so the flow from
/// words to a command is in one readable place.
public enum ParleyCommandLine {
    public static let version = "0.1.0"

    /// Runs `parley` with the process's arguments and environment; returns the exit status.
    public static func main() -> Int32 {
        let output = Output()
        defer { output.flush() }
        if let error = invalidUTF8Argument(rawArguments()) {
            output.errorLine(error.line)
            return error.exitCode
        }
        return run(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment, output: output)
    }

    /// Runs `parley` with `arguments` (without the program name). Never throws and never traps
    /// on bad input: every error ends as one line on stderr.
    public static func run(_ arguments: [String], environment: [String: String], output: Output) -> Int32 {
        var commandName: String?
        var context: Context?
        do {
            let (globals, rest) = try leadingGlobalOptions(arguments)
            if globals[GlobalOptions.version] {
                output.line("parley \(version)")
                return 0
            }
            if globals[GlobalOptions.help] && rest.isEmpty {
                output.line(HelpText.overview())
                return 0
            }
            guard let first = rest.first else {
                throw CLIError.usage("no command given", command: nil)
            }
            let (command, tokens) = try findCommand(first, rest.dropFirst())
            guard let command else {
                // A group (`task`) alone, or with --help: list its subcommands.
                if tokens.contains("--help") || tokens.contains("-h") || globals[GlobalOptions.help] {
                    output.line(HelpText.group(first))
                    return 0
                }
                let names = CommandRegistry.members(of: first).map { String($0.name.dropFirst(first.count + 1)) }
                throw CLIError.usage("`parley \(first)` needs a subcommand: \(names.joined(separator: ", "))", command: first)
            }
            commandName = command.name
            if globals[GlobalOptions.help] || helpRequested(tokens) {
                output.line(HelpText.command(command))
                return 0
            }
            let parsed = try ArgumentParser.parse(Array(tokens), options: CommandRegistry.options(for: command), command: command.name)
            // Options given after the command win over the same ones before it.
            let ownsPassphrase = command.options.contains { $0.name == GlobalOptions.passphraseFile.spec.name }
            let runContext = Context(
                output: output, environment: environment,
                dataDirectory: try parsed.value(GlobalOptions.dataDirectory) ?? globals.value(GlobalOptions.dataDirectory),
                passphraseFile: try (ownsPassphrase ? nil : parsed.value(GlobalOptions.passphraseFile))
                    ?? globals.value(GlobalOptions.passphraseFile))
            context = runContext
            if let skew = environment["PARLEY_CLOCK_SKEW_MS"], !skew.isEmpty {
                runContext.clockSkewMillis = try Context.clockSkew(skew, from: "$PARLEY_CLOCK_SKEW_MS", command: command.name)
            }
            // Whatever the command wrote — also before failing — the running node learns at once.
            defer { runContext.notifyNodeOfWrites() }
            return try command.run(runContext, parsed)
        } catch {
            let report = ErrorReport.cliError(for: error, databasePath: context?.databasePathIfKnown, command: commandName)
            output.errorLine(report.line)
            return report.exitCode
        }
    }

    /// The process's arguments as the bytes it was given, without the program name.
    /// `CommandLine.arguments` cannot serve: it turns bytes that are not UTF-8 into U+FFFD.
    static func rawArguments() -> [[UInt8]] {
        (1..<Int(CommandLine.argc)).map { index in
            guard let argument = CommandLine.unsafeArgv[index] else { return [] }
            return UnsafeBufferPointer(start: argument, count: strlen(argument)).map { UInt8(bitPattern: $0) }
        }
    }

    /// The error for the first of `arguments` that is not valid UTF-8; nil when all are.
    ///
    /// Every argument is text — a message, a nick, a title, a path — and Parley stores and sends
    /// text as UTF-8 (the web API refuses anything else too). Repaired silently, a message in
    /// another encoding would be stored changed, and a path would name a file that is not there.
    static func invalidUTF8Argument(_ arguments: [[UInt8]]) -> CLIError? {
        for (index, bytes) in arguments.enumerated() {
            guard let offset = UTF8Validation.firstInvalidOffset(bytes) else { continue }
            let before = String(decoding: bytes[..<offset], as: UTF8.self)
            let context = before.isEmpty ? "at its start" : "after '\(TerminalText.line(String(before.suffix(24))))'"
            return .usage(
                "argument \(index + 1) is not valid UTF-8 (byte \(UTF8Validation.hex(bytes[offset])) \(context)); parley takes "
                    + "text in UTF-8 only: set the terminal to UTF-8, or convert the text first (iconv -t UTF-8)",
                command: nil)
        }
        return nil
    }

    /// Splits off the global options before the command name.
    private static func leadingGlobalOptions(_ arguments: [String]) throws(CLIError) -> (ParsedArguments, ArraySlice<String>) {
        var end = 0
        // Find where the command starts: the first word that is neither an option nor the value
        // of a global option that takes one.
        while end < arguments.count {
            let token = arguments[end]
            guard token.hasPrefix("-"), token != "--" else { break }
            let name = token.hasPrefix("--") ? String(token.dropFirst(2).prefix { $0 != "=" }) : ""
            let takesValue = GlobalOptions.all.contains { $0.name == name } && !token.contains("=")
            end += takesValue ? 2 : 1
        }
        end = min(end, arguments.count)
        let options = GlobalOptions.all + [GlobalOptions.help.spec, GlobalOptions.version.spec]
        var tokens = Array(arguments[..<end])
        if let index = tokens.firstIndex(of: "-V") { tokens[index] = "--version" }
        let parsed = try ArgumentParser.parse(tokens, options: options, command: nil)
        var rest = arguments[end...]
        if rest.first == "--" { rest = rest.dropFirst() }
        return (parsed, rest)
    }

    /// The command `first` (and maybe the next word) selects, and the words left for it.
    /// Returns a nil command for a group name given without a known subcommand.
    private static func findCommand(_ first: String, _ rest: ArraySlice<String>) throws(CLIError) -> ((any Command)?, ArraySlice<String>) {
        if CommandRegistry.groups.contains(first) {
            if let second = rest.first, let command = CommandRegistry.command(named: first + " " + second) {
                return (command, rest.dropFirst())
            }
            if let second = rest.first, !second.hasPrefix("-") {
                let names = CommandRegistry.members(of: first).map { String($0.name.dropFirst(first.count + 1)) }
                var message = "unknown subcommand '\(second)' of `parley \(first)`"
                if let close = closestMatch(to: second, in: names) { message += " (did you mean `parley \(first) \(close)`?)" }
                throw .usage(message, command: first)
            }
            return (nil, rest)
        }
        if let command = CommandRegistry.command(named: first) { return (command, rest) }
        if CommandRegistry.planned.contains(first) {
            throw .failure("`parley \(first)` is not available in this version yet; run `parley --help` for the commands there are")
        }
        var message = "unknown command '\(first)'"
        if let close = closestMatch(to: first, in: CommandRegistry.allNames) { message += " (did you mean `parley \(close)`?)" }
        throw .usage(message, command: nil)
    }

    /// Whether `--help` or `-h` comes before any `--` (after it, they are text).
    private static func helpRequested(_ tokens: ArraySlice<String>) -> Bool {
        for token in tokens {
            if token == "--" { return false }
            if token == "--help" || token == "-h" { return true }
        }
        return false
    }
}
