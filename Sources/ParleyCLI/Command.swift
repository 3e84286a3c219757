/// One `parley` command. Each command is a small type that owns its help text, the options it
/// accepts and what it does, so adding a command touches one file and the registry.
///
/// `run` returns the exit status on success (normally 0) and throws for anything else;
/// `ErrorReport` turns every thrown error into one stderr line and status 1 or 2.
public protocol Command: Sendable {
    /// The words that select it: `send`, or `task add` for a subcommand.
    var name: String { get }
    /// One line for `parley --help`.
    var summary: String { get }
    /// Synopsis lines without the leading `parley `, e.g. `send --room NAME TEXT`.
    var usage: [String] { get }
    /// The options it accepts (the global ones and `--help` are added by the registry).
    var options: [OptionSpec] { get }
    /// Options for tests and the lab (timing knobs), listed apart in help under "Advanced".
    var advancedOptions: [OptionSpec] { get }
    /// Options parsed but listed nowhere (help, man page, completions): the completion
    /// scripts' own queries, which are no use to a person.
    var hiddenOptions: [OptionSpec] { get }
    /// Paragraphs that explain what a user must know: output, side effects, exit status.
    var details: [String] { get }
    /// Example invocations without the leading `parley `.
    var examples: [String] { get }
    /// Does the work. `arguments` were parsed with `options`.
    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32
}

extension Command {
    public var details: [String] { [] }
    public var advancedOptions: [OptionSpec] { [] }
    public var hiddenOptions: [OptionSpec] { [] }

    /// Throws a usage error unless there are between `range` positional arguments; `names`
    /// are the placeholders shown when one is missing (`ROOM`).
    func expectPositionals(_ arguments: ParsedArguments, _ range: ClosedRange<Int>, names: [String]) throws(CLIError) {
        let count = arguments.positionals.count
        if count < range.lowerBound {
            let missing = names.indices.contains(count) ? names[count] : "an argument"
            throw .usage("missing \(missing)", command: name)
        }
        if count > range.upperBound {
            let extra = arguments.positionals[range.upperBound]
            throw .usage("unexpected argument '\(extra)'", command: name)
        }
    }

    /// Refuses an option that belongs to a later version, with a clear message instead of
    /// pretending to do it.
    func refuseUnsupported<Value>(_ arguments: ParsedArguments, _ option: Option<Value>) throws(CLIError) {
        if arguments.has(option) {
            throw .failure("--\(option.spec.name) is not yet supported by this version of parley; leave it out for now")
        }
    }
}

/// The options every command accepts after its name as well as before it.
enum GlobalOptions {
    static let dataDirectory = Option.value("data-dir", "DIR", "where Parley keeps identity.key and parley.db")
    static let passphraseFile = Option.value("passphrase-file", "FILE", "read the key's passphrase from FILE")
    static let help = Flag.flag("help", "show this help")
    static let version = Flag.flag("version", "print the version")
    static let all = [dataDirectory.spec, passphraseFile.spec]
}

/// Every command, in the order `parley --help` lists them.
public enum CommandRegistry {
    public static let commands: [any Command] = [
        InitCommand(), WhoamiCommand(), JoinCommand(), LeaveCommand(), RoomsCommand(), RoomSetCommand(), RoomPassphraseCommand(),
        SendCommand(), HistoryCommand(), EditCommand(), DeleteCommand(), ReactCommand(), ReadCommand(), MuteCommand(), MuteCommand(muted: false),
        TasksCommand(), TaskAddCommand(), TaskSetCommand(), TaskDeleteCommand(),
        ConversationCreateCommand(), ConversationAddCommand(), ConversationRemoveCommand(), ConversationLeaveCommand(),
        ConversationRenameCommand(), ConversationsCommand(), PeopleCommand(), AttachmentCommand(),
        ProfileCommand(), DevicePairCommand(), DeviceListCommand(), DeviceRevokeCommand(), DeviceRecoverCommand(), WebLoginCommand(), WebLogoutCommand(),
        DigestCommand(), SQLCommand(),
        ExportCommand(), ImportCommand(),
        SalvageCommand(),
        RunCommand(), ChatCommand(), PeersCommand(), StatusCommand(), DoctorCommand(), WipeCommand(), LabRunCommand(), SimCommand(), HelpCommand(),
        CompletionCommand(), ManCommand(),
    ]

    /// Commands of docs/DESIGN.md §6.1 that later versions bring; naming one gets a clear answer
    /// instead of "unknown command".
    static let planned: Set<String> = []

    /// The first words of multi-word commands (`task`), which alone show a list of their subcommands.
    static var groups: [String] {
        var seen: [String] = []
        for command in commands {
            let words = command.name.split(separator: " ")
            if words.count > 1, !seen.contains(String(words[0])) { seen.append(String(words[0])) }
        }
        return seen
    }

    /// The subcommands of group `group`.
    static func members(of group: String) -> [any Command] {
        commands.filter { $0.name.hasPrefix(group + " ") }
    }

    /// The command named exactly `name`.
    static func command(named name: String) -> (any Command)? {
        commands.first { $0.name == name }
    }

    /// The options `command` parses: its own, then the global ones it does not redefine, then `--help`.
    static func options(for command: any Command) -> [OptionSpec] {
        let own = command.options + command.advancedOptions + command.hiddenOptions
        return own + GlobalOptions.all.filter { global in !own.contains { $0.name == global.name } } + [GlobalOptions.help.spec]
    }

    /// Every name a person might have meant: commands, groups and their first words.
    static var allNames: [String] {
        commands.map(\.name) + groups
    }
}
