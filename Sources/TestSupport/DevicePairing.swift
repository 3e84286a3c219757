import Foundation

/// Pairs a new data directory as a device of an existing one through the real commands, as a
/// person would (docs/DESIGN.md §4.4): `device pair` waits on the first, and `init --pair` on
/// the new one reads its code from `device pair`'s first line — or, with `byAddress`, the
/// `CODE@HOST:PORT` it prints next, so no beacon is needed.
public enum DevicePairingRun {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// What a pairing printed: the code, and both commands' outcomes.
    public struct Outcome: Sendable {
        public let code: String
        public let host: CompletedProcess
        public let guest: CompletedProcess
    }

    /// Runs both sides; `environment` goes to both (`HOME`, `PARLEY_PAIRING_PORT`). Throws when
    /// `device pair` prints no code within 10 s; otherwise returns both outcomes for the test to
    /// check.
    public static func pair(
        first: String, new: String, name: String, byAddress: Bool = false, environment: [String: String], captureIn directory: String
    ) async throws -> Outcome {
        guard let binary = ParleyExecutable.path else { throw Failure(description: ParleyExecutable.notFoundMessage) }
        let host = try ChildProcess(
            executable: binary, arguments: ["--data-dir", first, "device", "pair", "--broadcast", "127.255.255.255", "--minutes", "2"],
            environment: environment, captureIn: directory, name: "pair-\(name)-\(UUID().uuidString.prefix(6))")
        defer { host.kill() }
        let deadline = ContinuousClock.now + .seconds(10)
        var lines: [String] = []
        while lines.count < 2, host.isRunning, ContinuousClock.now < deadline {
            lines = host.stdout.split(separator: "\n").map(String.init)
            try await Task.sleep(for: .milliseconds(50))
        }
        guard lines.count >= 2 else {
            throw Failure(description: "device pair printed no code in 10 s:\n\(host.stdout)\n\(host.stderr)")
        }
        let code = lines[0]
        let invitation = byAddress ? (lines[1].split(separator: " ").last.map(String.init) ?? code) : code
        let guest = await CompletedProcess.run(
            binary, ["--data-dir", new, "init", "--pair", invitation, "--name", name], environment: environment, captureIn: directory,
            timeout: .seconds(60))
        _ = await host.waitForExit(timeout: .seconds(20))
        let hostOutcome = CompletedProcess(
            arguments: host.arguments, exitCode: host.exitStatus ?? -1, stdout: host.stdout, stderr: host.stderr, timedOut: host.isRunning)
        return Outcome(code: code, host: hostOutcome, guest: guest)
    }
}
