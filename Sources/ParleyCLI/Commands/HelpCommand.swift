/// `parley help [COMMAND]`: the same text as `--help`, for people who type it this way.
struct HelpCommand: Command {
    let name = "help"
    let summary = "show help for all commands, or for one"
    let usage = ["help [COMMAND]"]
    let options: [OptionSpec] = []
    let examples = ["help", "help send", "help task add"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        let words = arguments.positionals
        guard !words.isEmpty else {
            context.output.line(HelpText.overview())
            return 0
        }
        let wanted = words.joined(separator: " ")
        if let command = CommandRegistry.command(named: wanted) {
            context.output.line(HelpText.command(command))
        } else if words.count == 1, CommandRegistry.groups.contains(wanted) {
            context.output.line(HelpText.group(wanted))
        } else {
            var message = "no command called '\(wanted)'"
            if let close = closestMatch(to: wanted, in: CommandRegistry.allNames) { message += " (did you mean `parley help \(close)`?)" }
            throw CLIError.usage(message, command: nil)
        }
        return 0
    }
}
