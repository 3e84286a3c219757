/// One `--option` a command accepts.
public struct OptionSpec: Sendable, Equatable {
    /// The name without dashes: `room` for `--room`.
    public let name: String
    /// The placeholder of its value in help (`NAME`), or nil for a flag that takes none.
    public let valueName: String?
    /// One line for the help text.
    public let help: String

    /// An option that takes a value: `--room NAME` or `--room=NAME`.
    public static func value(_ name: String, _ valueName: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, valueName: valueName, help: help)
    }

    /// A flag: `--json`.
    public static func flag(_ name: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, valueName: nil, help: help)
    }

    /// `--room NAME` or `--json`, as shown in help.
    public var synopsis: String { valueName.map { "--\(name) \($0)" } ?? "--\(name)" }
}

/// A command's `--option NAME` with the type of its value: declared once, it gives the parser
/// and help their `OptionSpec`, and it is the one way to read the value (`arguments.value(_:)`),
/// converted by `parse`, whose usage error names the command.
public struct Option<Value>: Sendable {
    public let spec: OptionSpec
    let parse: @Sendable (_ text: String, _ command: String) throws(CLIError) -> Value

    /// An option whose value `parse` converts (it throws the usage error for a bad one).
    static func value(
        _ name: String, _ valueName: String, _ help: String,
        parse: @escaping @Sendable (_ text: String, _ command: String) throws(CLIError) -> Value
    ) -> Option {
        Option(spec: .value(name, valueName, help), parse: parse)
    }
}

extension Option where Value == String {
    /// An option whose value is taken as it is.
    static func value(_ name: String, _ valueName: String, _ help: String) -> Option {
        Option(spec: .value(name, valueName, help)) { text, _ in text }
    }
}

/// A command's `--flag`, which takes no value: its `OptionSpec` and the one way to ask whether
/// it was given (`arguments[flag]`).
public struct Flag: Sendable {
    public let spec: OptionSpec

    static func flag(_ name: String, _ help: String) -> Flag { Flag(spec: .flag(name, help)) }
}

/// A command line split into flags, option values and positional arguments. Options are read
/// through their typed declarations (`Option`, `Flag`) only.
public struct ParsedArguments: Sendable, Equatable {
    var flags: Set<String> = []
    /// Every value given for each option, in order (an option given twice keeps both).
    var values: [String: [String]] = [:]
    public internal(set) var positionals: [String] = []
    /// The command whose options these are (nil before the command), for usage errors.
    var command: String?
    /// The options it was parsed with: reading another is a mistake in the command.
    var known: Set<String> = []

    public init() {}

    private func texts(_ spec: OptionSpec) -> [String] {
        precondition(known.contains(spec.name), "--\(spec.name) is not an option of `\(command ?? "parley")`")
        return values[spec.name] ?? []
    }

    /// Whether `flag` was given.
    public subscript(flag: Flag) -> Bool {
        precondition(known.contains(flag.spec.name), "--\(flag.spec.name) is not an option of `\(command ?? "parley")`")
        return flags.contains(flag.spec.name)
    }

    /// Whether `flag` is one of the options these were parsed with (for code two commands share).
    func knows(_ flag: Flag) -> Bool { known.contains(flag.spec.name) }

    /// Whether `option` was given (with any value).
    public func has<Value>(_ option: Option<Value>) -> Bool { !texts(option.spec).isEmpty }

    /// The value of `option`; the last one if given more than once (later wins, as in most tools).
    public func value<Value>(_ option: Option<Value>) throws(CLIError) -> Value? {
        guard let text = texts(option.spec).last else { return nil }
        return try option.parse(text, command ?? "")
    }

    /// Every value given for `option`, in order (a repeatable option).
    public func values<Value>(_ option: Option<Value>) throws(CLIError) -> [Value] {
        var parsed: [Value] = []
        for text in texts(option.spec) { parsed.append(try option.parse(text, command ?? "")) }
        return parsed
    }

    /// The value of `option`, or a usage error saying it is required.
    public func required<Value>(_ option: Option<Value>) throws(CLIError) -> Value {
        guard let value = try value(option) else {
            throw .usage("missing --\(option.spec.name) \(option.spec.valueName ?? "VALUE")", command: command)
        }
        return value
    }
}

/// A small parser for the command-line conventions scripts expect: `--opt value`,
/// `--opt=value`, flags, positionals anywhere, `--` to end options (so a message may start
/// with a dash), and `-h` for help.
///
/// It knows nothing about commands; it is given the options one command accepts, which keeps
/// parsing rules in one place and help text in each command.
public enum ArgumentParser {
    /// Splits `tokens` (the words after the command name) by `options`.
    ///
    /// Throws `CLIError.usage` naming `command` for an unknown option (with a suggestion when
    /// one is close), a value given to a flag, or a missing value.
    public static func parse(_ tokens: [String], options: [OptionSpec], command: String?) throws(CLIError) -> ParsedArguments {
        var parsed = ParsedArguments()
        (parsed.command, parsed.known) = (command, Set(options.map(\.name) + ["help"]))
        var index = 0
        while index < tokens.count {
            let token = tokens[index]
            index += 1
            if token == "--" {
                parsed.positionals += tokens[index...]
                break
            }
            if token == "-h" {
                parsed.flags.insert("help")
                continue
            }
            guard token.hasPrefix("--"), token.count > 2 else {
                if token.hasPrefix("-"), token.count > 1, !looksNumeric(token) {
                    throw .usage(
                        "unknown option \(token) (options start with two dashes; put `--` before text that starts with a dash)",
                        command: command)
                }
                parsed.positionals.append(token)
                continue
            }
            let body = token.dropFirst(2)
            let name: String
            let inlineValue: String?
            if let equals = body.firstIndex(of: "=") {
                name = String(body[..<equals])
                inlineValue = String(body[body.index(after: equals)...])
            } else {
                name = String(body)
                inlineValue = nil
            }
            guard let spec = options.first(where: { $0.name == name }) else {
                throw .usage(unknownOptionMessage(name, options: options, command: command), command: command)
            }
            guard let valueName = spec.valueName else {
                if inlineValue != nil { throw .usage("--\(name) takes no value", command: command) }
                parsed.flags.insert(name)
                continue
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else if index < tokens.count, !isKnownOption(tokens[index], in: options) {
                value = tokens[index]
                index += 1
            } else {
                throw .usage("--\(name) needs a value (\(valueName))", command: command)
            }
            parsed.values[name, default: []].append(value)
        }
        return parsed
    }

    /// Whether `token` is one of `options` (`--json`, `--room=x`): then it cannot be the value
    /// of the option before it, which was most likely left without one.
    private static func isKnownOption(_ token: String, in options: [OptionSpec]) -> Bool {
        guard token.hasPrefix("--") else { return token == "-h" }
        let name = token.dropFirst(2).split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return options.contains { $0.name == name }
    }

    /// `-12.5` or `-3`: a negative number given as an argument, not an option.
    private static func looksNumeric(_ token: String) -> Bool {
        Double(token) != nil
    }

    private static func unknownOptionMessage(_ name: String, options: [OptionSpec], command: String?) -> String {
        guard let command else {
            // Before the command only global options are known; the rest belong after its name.
            return "unknown option --\(name) before the command (a command's own options go after its name)"
        }
        var message = "unknown option --\(name) for `parley \(command)`"
        if let close = closestMatch(to: name, in: options.map(\.name)) { message += " (did you mean --\(close)?)" }
        return message
    }
}

/// The candidate closest to `word` by edit distance, if it is close enough to be a typo.
func closestMatch(to word: String, in candidates: [String]) -> String? {
    let scored = candidates.map { ($0, editDistance(word.lowercased(), $0)) }
    guard let best = scored.min(by: { $0.1 < $1.1 }) else { return nil }
    let allowed = max(1, min(3, best.0.count / 3))
    if best.1 <= allowed || (word.count >= 3 && best.0.hasPrefix(word.lowercased())) { return best.0 }
    return nil
}

/// Levenshtein distance over characters (the words are short: command and option names).
func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a), b = Array(b)
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var previous = Array(0...b.count)
    var current = [Int](repeating: 0, count: b.count + 1)
    for i in 1...a.count {
        current[0] = i
        for j in 1...b.count {
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
        }
        swap(&previous, &current)
    }
    return previous[b.count]
}
