import Foundation

/// The real `parley` binary that SwiftPM builds beside the test bundle, for tests that spawn it
/// (docs/DESIGN.md §8: multi-process tests run the binary, never an in-process stand-in).
public enum ParleyExecutable {
    /// The path of the built `parley`, or nil. Looks beside the test bundle and the test process
    /// (`.build/<triple>/debug/`), then upwards a few levels; `$PARLEY_BINARY` overrides.
    public static let path: String? = {
        let fileManager = FileManager.default
        if let override = ProcessInfo.processInfo.environment["PARLEY_BINARY"] { return override }
        var directories: [URL] = []
        let bundle = Bundle.main.bundleURL
        directories.append(bundle.hasDirectoryPath ? bundle : bundle.deletingLastPathComponent())
        directories.append(bundle.deletingLastPathComponent())
        if let executable = CommandLine.arguments.first {
            let url = URL(fileURLWithPath: executable).resolvingSymlinksInPath()
            directories.append(url.deletingLastPathComponent())
        }
        for bundleURL in Bundle.allBundles.map(\.bundleURL) where bundleURL.pathExtension == "xctest" {
            directories.append(bundleURL.deletingLastPathComponent())
        }
        var candidates: [URL] = []
        for directory in directories {
            var current = directory
            for _ in 0..<4 {
                candidates.append(current.appendingPathComponent("parley"))
                candidates.append(current.appendingPathComponent("debug/parley"))
                current.deleteLastPathComponent()
            }
        }
        return candidates.first { fileManager.isExecutableFile(atPath: $0.path) && !$0.hasDirectoryPath }?.path
    }()

    /// Why `path` is nil, for a test failure message.
    public static var notFoundMessage: String {
        "the parley binary was not found beside the test bundle (\(Bundle.main.bundleURL.path)); "
            + "run `swift build` first, or set PARLEY_BINARY"
    }
}

/// The outcome of a process run to completion.
public struct CompletedProcess: Sendable, CustomStringConvertible {
    public let arguments: [String]
    public let exitCode: Int32
    public let stdout: String
    public let stderr: String
    public let timedOut: Bool

    public init(arguments: [String], exitCode: Int32, stdout: String, stderr: String, timedOut: Bool) {
        self.arguments = arguments
        self.exitCode = exitCode
        self.stdout = stdout
        self.stderr = stderr
        self.timedOut = timedOut
    }

    public var description: String {
        "`\(arguments.joined(separator: " "))` exited \(exitCode)\(timedOut ? " (timed out)" : "")\nstdout:\n\(stdout)\nstderr:\n\(stderr)"
    }

    /// Runs `executable arguments` to completion (killed after `timeout`).
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:],
        captureIn directory: String, timeout: Duration = .seconds(20)
    ) async -> CompletedProcess {
        let name = "run-\(UUID().uuidString)"
        guard
            let child = try? ChildProcess(
                executable: executable, arguments: arguments, environment: environment,
                captureIn: directory, name: name)
        else {
            return CompletedProcess(arguments: arguments, exitCode: -1, stdout: "", stderr: "cannot start \(executable)", timedOut: false)
        }
        let ended = await child.waitForExit(timeout: timeout)
        if !ended { child.kill() }
        let result = CompletedProcess(
            arguments: arguments, exitCode: child.exitStatus ?? -1, stdout: child.stdout,
            stderr: child.stderr, timedOut: !ended)
        try? FileManager.default.removeItem(atPath: child.stdoutPath)
        try? FileManager.default.removeItem(atPath: child.stderrPath)
        return result
    }
}
