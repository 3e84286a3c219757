import Testing

@testable import ParleyCLI

/// Every command explains itself: `--help`, `-h` and `parley help COMMAND` exit 0 with usage.
@Suite(.onCommandThreads) struct HelpTests {
    static let commandNames = CommandRegistry.commands.map(\.name)

    @Test(arguments: commandNames)
    func commandHelp_exitsZeroAndShowsUsage(name: String) throws {
        try withSandbox { sandbox in
            let words = name.split(separator: " ").map(String.init)
            for arguments in [words + ["--help"], words + ["-h"], ["help"] + words] {
                let run = sandbox.parleyRaw(arguments)
                expectSuccess(run)
                #expect(run.stdout.contains("Usage:\n  parley \(name)"), "\(run)")
                #expect(run.stdout.contains("Example"), "\(run)")
            }
        }
    }

    @Test func overview_listsEveryCommandAndTheEnvironment() throws {
        try withSandbox { sandbox in
            for arguments in [["--help"], ["-h"], ["help"]] {
                let run = sandbox.parleyRaw(arguments)
                expectSuccess(run)
                for name in Self.commandNames { #expect(run.stdout.contains("  \(name) "), "\(name) missing in \(run)") }
                for variable in ["PARLEY_DATA_DIR", "XDG_DATA_HOME", "PARLEY_PASSPHRASE", "--data-dir", "--passphrase-file"] {
                    #expect(run.stdout.contains(variable))
                }
            }
            let version = sandbox.parleyRaw(["--version"])
            expectSuccess(version)
            #expect(version.stdout.hasPrefix("parley "))
            let group = sandbox.parleyRaw(["task", "--help"])
            expectSuccess(group)
            #expect(group.stdout.contains("parley task add") && group.stdout.contains("parley task delete"))
        }
    }

    /// Help never needs a data directory, even a broken one.
    @Test func help_touchesNoFiles() throws {
        try withSandbox { sandbox in
            let file = sandbox.write("file", "x")
            expectSuccess(sandbox.parleyRaw(["--data-dir", file, "send", "--help"]))
        }
    }
}
