import Presentation
import Testing

@testable import ParleyCLI

/// The parser's conventions, without spawning a process.
@Suite(.onCommandThreads) struct ArgumentParserTests {
    static let room = Option.value("room", "NAME", "")
    static let limit = Option.value("limit", "N", "")
    static let json = Flag.flag("json", "")
    static let help = Flag.flag("help", "")
    static let options = [room.spec, limit.spec, json.spec]

    func parse(_ tokens: [String]) throws(CLIError) -> ParsedArguments {
        try ArgumentParser.parse(tokens, options: Self.options, command: "history")
    }

    @Test func optionsFlagsAndPositionals_inAnyOrder() throws {
        let parsed = try parse(["hello", "--room", "lobby", "--json", "world", "--limit=5"])
        #expect(parsed.positionals == ["hello", "world"])
        #expect(try parsed.value(Self.room) == "lobby")
        #expect(try parsed.value(Self.limit) == "5")
        #expect(parsed[Self.json])
        #expect(!parsed[Self.help])
    }

    @Test func doubleDash_endsOptions() throws {
        let parsed = try parse(["--room", "x", "--", "--json", "-h"])
        #expect(parsed.positionals == ["--json", "-h"])
        #expect(!parsed[Self.json])
    }

    @Test func laterValue_wins_andNegativeNumbersArePositionals() throws {
        let parsed = try parse(["--room", "a", "--room=b", "-12.5"])
        #expect(try parsed.value(Self.room) == "b")
        #expect(try parsed.values(Self.room) == ["a", "b"])
        #expect(parsed.positionals == ["-12.5"])
        #expect(try parse(["--room", "-x"]).value(Self.room) == "-x")
        #expect(try parse(["--room="]).value(Self.room) == "")
    }

    @Test func mistakes_areUsageErrorsNamingTheCommand() {
        #expect(throws: CLIError.usage("unknown option --rom for `parley history` (did you mean --room?)", command: "history")) {
            try parse(["--rom", "x"])
        }
        #expect(throws: CLIError.usage("--room needs a value (NAME)", command: "history")) { try parse(["--room"]) }
        #expect(throws: CLIError.usage("--room needs a value (NAME)", command: "history")) { try parse(["--room", "--json"]) }
        #expect(throws: CLIError.usage("--json takes no value", command: "history")) { try parse(["--json=1"]) }
        #expect(throws: CLIError.self) { try parse(["-j"]) }
    }

    @Test func errorLines_areOneLineWithTheFix() {
        #expect(CLIError.usage("missing ROOM", command: "join").line == "parley: missing ROOM; see `parley join --help`")
        #expect(CLIError.failure("a\nb\n\tc").line == "parley: a b c")
        #expect(CLIError.usage("x", command: nil).exitCode == 2)
        #expect(CLIError.failure("x").exitCode == 1)
    }

    @Test func suggestions_onlyForCloseWords() {
        #expect(closestMatch(to: "hsitory", in: ["history", "help"]) == "history")
        #expect(closestMatch(to: "tsks", in: ["tasks", "task add"]) == "tasks")
        #expect(closestMatch(to: "zzz", in: ["history", "help"]) == nil)
    }
}

/// The JSON writer behind every `--json`.
@Suite(.onCommandThreads) struct JSONTests {
    @Test func sortedKeys_escapes_andExactIntegers() {
        let value = JSON.array([
            .object([
                "b": .unsigned(UInt64.max), "a": .string("q\"\\\n\u{1}👍"), "c": .null, "d": .array([]), "e": .bool(true), "f": .number(52.5),
            ])
        ])
        #expect(
            value.text == """
                [
                  {
                    "a": "q\\"\\\\\\n\\u0001👍",
                    "b": 18446744073709551615,
                    "c": null,
                    "d": [],
                    "e": true,
                    "f": 52.5
                  }
                ]
                """)
        #expect(JSON.array([]).text == "[]")
    }

    @Test func isoTime_isUTCWithMilliseconds() {
        #expect(Format.isoTime(millis: 1_767_225_600_123) == "2026-01-01T00:00:00.123Z")
        #expect(Format.isoTime(millis: 0) == "1970-01-01T00:00:00.000Z")
    }
}
