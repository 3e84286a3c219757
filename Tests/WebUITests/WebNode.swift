import Foundation
import TestSupport
import Testing

/// Waits until `condition` holds, checking every `interval`, for at most `timeout`; true if it
/// held. Never a bare sleep: a test waits exactly as long as the system needs, up to a bound.
@discardableResult
func poll(timeout: Duration, interval: Duration = .milliseconds(50), _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if await condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: interval)
    }
}

/// A temporary directory for one test, removed by `remove()`.
final class TestDirectory: Sendable {
    let path: String

    init(_ label: String) {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("parley-web-\(label)-\(UUID().uuidString.prefix(8))").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// One real `parley run` process with its web server on an ephemeral loopback port, and the URL
/// (with the token) it printed at start.
// @unchecked: the `var`s are written by `start` and `stop` on the test's task, which alone reads them.
final class WebNode: @unchecked Sendable {
    let name: String
    let dataDir: String
    let directory: TestDirectory
    private(set) var id = ""
    private(set) var process: ChildProcess?
    private(set) var url = ""
    private(set) var port: UInt16 = 0
    private(set) var token = ""

    init(name: String, in directory: TestDirectory) {
        self.name = name
        self.directory = directory
        dataDir = directory.path + "/" + name
    }

    var client: HTTPTestClient { HTTPTestClient(port: port) }
    var bearer: [String: String] { ["Authorization": "Bearer \(token)"] }

    /// `parley init` (with `--nick` when given).
    func create(nick: String?, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let result = await parley(["init"] + (nick.map { ["--nick", $0] } ?? []))
        try #require(result.exitCode == 0, "\(result)", sourceLocation: sourceLocation)
        id = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Starts `parley run --web 127.0.0.1:0 --listen 127.0.0.1:0` plus `network` (discovery
    /// options: loopback broadcast or none) and waits for the web URL on its stdout.
    func start(
        network: [String] = ["--no-discovery"], web: [String] = ["--web", "127.0.0.1:0"], sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let binary = try #require(ParleyExecutable.path, Comment(rawValue: ParleyExecutable.notFoundMessage), sourceLocation: sourceLocation)
        let process = try ChildProcess(
            executable: binary, arguments: ["--data-dir", dataDir, "run", "--listen", "127.0.0.1:0"] + web + network,
            environment: ["HOME": directory.path], captureIn: directory.path, name: "\(name)-run")
        self.process = process
        var line: Substring?
        let up = await poll(timeout: .seconds(15)) {
            line = process.stdout.split(separator: "\n").first { $0.hasPrefix("parley web UI on port ") }
            return line != nil || !process.isRunning
        }
        let found = try #require(line, "\(name) printed no web URL (up: \(up)):\n\(process.stdout)\n\(process.stderr)", sourceLocation: sourceLocation)
        let text = String(found)
        url = String(text[text.range(of: "http://")!.lowerBound...])
        token = String(url[url.range(of: "token=")!.upperBound...])
        let portText = url.dropFirst("http://127.0.0.1:".count).prefix { $0 != "/" }
        port = try #require(UInt16(portText), "no port in \(url)", sourceLocation: sourceLocation)
    }

    func kill() { process?.kill() }

    func parley(_ arguments: [String]) async -> CompletedProcess {
        guard let binary = ParleyExecutable.path else {
            return CompletedProcess(arguments: arguments, exitCode: -1, stdout: "", stderr: ParleyExecutable.notFoundMessage, timedOut: false)
        }
        return await CompletedProcess.run(binary, ["--data-dir", dataDir] + arguments, environment: ["HOME": directory.path], captureIn: directory.path)
    }

    var log: String { "---- \(name) stdout ----\n\(process?.stdout ?? "")\n---- \(name) stderr ----\n\(process?.stderr ?? "")" }
}
