import Foundation
import Subprocess

/// Why a lab run could not go on; `usage` errors are the command line's (exit status 2).
public enum LabError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A bad option value or fault spec: what is wrong and how to write it.
    case usage(String)
    /// Something the lab needed failed (a node would not start, a namespace could not be made).
    case failure(String)

    public var description: String {
        switch self {
        case .usage(let message), .failure(let message): message
        }
    }
}

/// Short helper processes of the lab (`parley init`, `ip`), run to completion.
public enum LabProcess {
    public struct Result: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String
    }

    /// Runs `executable arguments` to completion (killed after `timeout`); output is captured in
    /// files under `directory`, removed afterwards.
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], captureIn directory: String,
        timeout: Duration
    ) async -> Result {
        let name = "helper-\(UUID().uuidString.prefix(8))"
        guard
            let child = try? ChildProcess(
                executable: executable, arguments: arguments, environment: environment, captureIn: directory, name: name)
        else { return Result(status: -1, stdout: "", stderr: "cannot start \(executable)") }
        let ended = await child.waitForExit(timeout: timeout)
        if !ended { child.kill() }
        let result = Result(status: ended ? child.exitStatus ?? -1 : -1, stdout: child.stdout, stderr: ended ? child.stderr : "timed out")
        try? FileManager.default.removeItem(atPath: child.stdoutPath)
        try? FileManager.default.removeItem(atPath: child.stderrPath)
        return result
    }

    /// The peak resident set (`VmHWM`) of process `pid` in bytes, or nil when it is gone.
    public static func peakRSS(of pid: Int32) -> UInt64? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if fields.count >= 2, let kilobytes = UInt64(fields[1]) { return kilobytes * 1024 }
        }
        return nil
    }

    /// The current resident set (`VmRSS`) of process `pid` in bytes, or nil when it is gone.
    public static func residentSet(of pid: Int32) -> UInt64? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if fields.count >= 2, let kilobytes = UInt64(fields[1]) { return kilobytes * 1024 }
        }
        return nil
    }

    /// User plus system CPU seconds of process `pid` so far (`/proc/PID/stat`), or nil.
    public static func cpuSeconds(of pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // Fields after the command name: state is field 3; utime and stime are 14 and 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The path of the running executable (`/proc/self/exe`), so the lab starts the very
    /// `parley` it runs in.
    static var ownExecutable: String? {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
    }
}
