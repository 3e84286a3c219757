import Foundation
import Presentation
import TestSupport
import Testing

/// The outcome of one run of the real `parley` binary.
struct ParleyRun: CustomStringConvertible {
    let arguments: [String]
    let exitCode: Int32
    let stdout: String
    let stderr: String
    let timedOut: Bool

    var stdoutLines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init).dropLastIfEmpty() }
    var stderrLines: [String] { stderr.split(separator: "\n", omittingEmptySubsequences: false).map(String.init).dropLastIfEmpty() }

    /// Standard output parsed as the one JSON array of objects a `--json` command prints.
    func jsonArray(sourceLocation: SourceLocation = #_sourceLocation) -> [[String: Any]] {
        guard let data = stdout.data(using: .utf8),
            let value = try? JSONSerialization.jsonObject(with: data),
            let array = value as? [[String: Any]]
        else {
            Issue.record(
                "stdout of `parley \(arguments.joined(separator: " "))` is not a JSON array of objects:\n\(stdout)",
                sourceLocation: sourceLocation)
            return []
        }
        return array
    }

    var description: String {
        "`parley \(arguments.joined(separator: " "))` exited \(exitCode)\(timedOut ? " (timed out)" : "")\n"
            + "stdout:\n\(stdout)\nstderr:\n\(stderr)"
    }
}

extension Array where Element == String {
    fileprivate func dropLastIfEmpty() -> [String] { last == "" ? Array(dropLast()) : self }
}

/// Runs the real `parley` executable, which SwiftPM builds beside the test bundle (docs/DESIGN.md §8:
/// multi-process tests spawn the binary, never an in-process stand-in).
enum ParleyBinary {
    /// Seconds a single command may take before it is killed and the test fails.
    static let timeout: TimeInterval = 20

    /// The path of the built `parley`, or nil (see `ParleyExecutable`).
    static let path: String? = ParleyExecutable.path

    /// Runs `parley arguments` with a clean environment (HOME pointing into `home`, so a test
    /// can never touch the real ~/.local/share/parley) plus `environment`, stdin from /dev/null.
    /// `launcher` runs the binary through another program (`setpriv` to drop root).
    static func run(
        _ arguments: [String], home: String, environment: [String: String] = [:], launcher: [String] = [],
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> ParleyRun {
        guard let path else {
            let problem =
                "the parley binary was not found beside the test bundle (\(Bundle.main.bundleURL.path)); "
                + "run `swift build` first, or set PARLEY_BINARY"
            Issue.record(Comment(rawValue: problem), sourceLocation: sourceLocation)
            return ParleyRun(arguments: arguments, exitCode: -1, stdout: "", stderr: "", timedOut: false)
        }
        let command = launcher + [path] + arguments
        let captured = CapturedRun.run(command[0], Array(command.dropFirst()), home: home, environment: environment, timeout: timeout)
        if let problem = captured.problem { Issue.record(Comment(rawValue: problem), sourceLocation: sourceLocation) }
        if captured.timedOut {
            Issue.record(
                "`parley \(arguments.joined(separator: " "))` did not finish within \(Int(timeout)) s; killed it",
                sourceLocation: sourceLocation)
        }
        return ParleyRun(arguments: arguments, exitCode: captured.status, stdout: captured.stdout, stderr: captured.stderr, timedOut: captured.timedOut)
    }
}

/// A child process run to its end with its output captured, as the CLI tests run `parley` and the
/// tools they check its output with (bash, groff, man).
struct CapturedRun {
    var status: Int32 = -1
    var stdout = ""
    var stderr = ""
    var timedOut = false
    /// Why the process could not be started (nil: it ran).
    var problem: String?

    /// Runs `program arguments` with a clean environment (HOME pointing into `home`, so a test can
    /// never touch the real ~/.local/share/parley) plus `environment`, stdin from /dev/null; kills
    /// it after `timeout` seconds.
    static func run(_ program: String, _ arguments: [String], home: String, environment: [String: String] = [:], timeout: TimeInterval) -> CapturedRun {
        let fileManager = FileManager.default
        let capture = fileManager.temporaryDirectory.appendingPathComponent("parley-run-\(UUID().uuidString)")
        try? fileManager.createDirectory(at: capture, withIntermediateDirectories: true)
        defer { try? fileManager.removeItem(at: capture) }
        let outURL = capture.appendingPathComponent("stdout"), errURL = capture.appendingPathComponent("stderr")
        _ = fileManager.createFile(atPath: outURL.path, contents: nil)
        _ = fileManager.createFile(atPath: errURL.path, contents: nil)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        var childEnvironment = ["HOME": home, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TZ": "UTC"]
        childEnvironment.merge(environment) { _, new in new }
        process.environment = childEnvironment
        process.standardInput = FileHandle.nullDevice
        // Files, not pipes: a chatty child can never block on a full pipe while we wait.
        guard let outHandle = try? FileHandle(forWritingTo: outURL), let errHandle = try? FileHandle(forWritingTo: errURL) else {
            return CapturedRun(problem: "cannot create capture files in \(capture.path)")
        }
        defer { try? outHandle.close(); try? errHandle.close() }
        process.standardOutput = outHandle
        process.standardError = errHandle

        let finished = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in finished.signal() }
        do {
            try process.run()
        } catch {
            return CapturedRun(problem: "cannot start \(program): \(error)")
        }
        var run = CapturedRun()
        if finished.wait(timeout: .now() + timeout) == .timedOut {
            run.timedOut = true
            kill(process.processIdentifier, SIGKILL)
            finished.wait()
        }
        run.status = process.terminationStatus
        run.stdout = (try? String(contentsOf: outURL, encoding: .utf8)) ?? ""
        run.stderr = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
        return run
    }
}

/// A temporary directory holding one node's data directory (`data`) and files a test makes;
/// removed when the test's closure returns.
struct Sandbox {
    let root: String
    var dataDir: String { root + "/data" }

    /// Runs `parley --data-dir <dataDir> arguments...`.
    func parley(
        _ arguments: String..., environment: [String: String] = [:],
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> ParleyRun {
        ParleyBinary.run(["--data-dir", dataDir] + arguments, home: root, environment: environment, sourceLocation: sourceLocation)
    }

    /// Runs `parley arguments...` with no --data-dir (tests of the directory's resolution).
    func parleyRaw(
        _ arguments: [String], environment: [String: String] = [:],
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> ParleyRun {
        ParleyBinary.run(arguments, home: root, environment: environment, sourceLocation: sourceLocation)
    }

    /// `parley init --nick nick`, expecting success; returns the printed user id.
    @discardableResult
    func initialize(nick: String = "alice", sourceLocation: SourceLocation = #_sourceLocation) -> String {
        let run = parley("init", "--nick", nick, sourceLocation: sourceLocation)
        expectSuccess(run, sourceLocation: sourceLocation)
        return run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Writes `contents` to `name` inside the sandbox and returns its path.
    func write(_ name: String, _ contents: String, mode: Int = 0o600) -> String {
        let path = root + "/" + name
        _ = FileManager.default.createFile(atPath: path, contents: Data(contents.utf8), attributes: [.posixPermissions: mode])
        return path
    }
}

/// Runs `body` with a fresh sandbox under the temp directory, removed afterwards.
func withSandbox(_ body: (Sandbox) throws -> Void) throws {
    let sandbox = Sandbox.make()
    defer { sandbox.remove() }
    try body(sandbox)
}

/// `withSandbox` for a test that awaits.
func withSandbox(_ body: (Sandbox) async throws -> Void) async throws {
    let sandbox = Sandbox.make()
    defer { sandbox.remove() }
    try await body(sandbox)
}

extension Sandbox {
    static func make() -> Sandbox {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("parley-cli-test-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        return Sandbox(root: root)
    }

    func remove() {
        // A test may have made a directory unwritable; give permissions back before removing.
        _ = try? FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: dataDir)
        try? FileManager.default.removeItem(atPath: root)
    }
}

// MARK: - Expectations

/// Expects exit status 0 and nothing on stderr.
func expectSuccess(_ run: ParleyRun, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(run.exitCode == 0 && !run.timedOut, "\(run)", sourceLocation: sourceLocation)
    #expect(run.stderr.isEmpty, "\(run)", sourceLocation: sourceLocation)
}

/// Expects a failure with `exitCode`: exactly one `parley: ...` line on stderr containing
/// `fragment`, nothing on stdout, and no sign of a crash.
func expectError(_ run: ParleyRun, exitCode: Int32, _ fragment: String, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(run.exitCode == exitCode, "\(run)", sourceLocation: sourceLocation)
    #expect(run.stderrLines.count == 1, "stderr must be one line: \(run)", sourceLocation: sourceLocation)
    #expect(run.stderr.hasPrefix("parley: "), "\(run)", sourceLocation: sourceLocation)
    #expect(run.stderr.contains(fragment), "expected '\(fragment)' in stderr: \(run)", sourceLocation: sourceLocation)
    #expect(run.stdout.isEmpty, "\(run)", sourceLocation: sourceLocation)
    for crashSign in ["Fatal error", "Stack", "stack dump", "Backtrace", "SQLite error"] {
        #expect(!run.stderr.contains(crashSign), "\(run)", sourceLocation: sourceLocation)
    }
    if exitCode == 2 {
        #expect(run.stderr.contains("--help"), "a usage error should point to --help: \(run)", sourceLocation: sourceLocation)
    }
}
