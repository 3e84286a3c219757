import Foundation
import Replica
import Synchronization

/// Levelled log lines on standard error (or any sink): `2026-01-01T12:00:00.123Z info  message`,
/// or `<6>message` when standard error is the systemd journal (`Format.journal`).
///
/// What is logged: peers appearing, linking and leaving (as `nick#short` and an address), bans,
/// startup and shutdown. Never keys or secrets. Sendable: lines are written whole under a lock.
///
/// Every line that input from the network can cause MUST name its `LogKind` (`log.warn(.banned,
/// …)`): those go through one `LogLimiter` (10 lines of a kind and 100 in all per 10 s, then one
/// summary line), so forged beacons or a peer that keeps relinking cannot make the node write
/// without end. Lines below the log's level are dropped first and do not count. Lines only a
/// local action causes (start, stop, a socket failing) take no kind.
public struct NodeLog: Sendable {
    /// How much to log; each level includes the ones above it.
    public enum Level: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
        case debug, info, warn, error

        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }

        /// Parses `debug`, `info`, `warn` (or `warning`), `error`.
        public init?(name: String) {
            switch name.lowercased() {
            case "debug": self = .debug
            case "info": self = .info
            case "warn", "warning": self = .warn
            case "error": self = .error
            default: return nil
            }
        }

        /// The syslog priority of the level (RFC 5424: 7 debug, 6 informational, 4 warning, 3 error).
        public var syslogPriority: Int {
            switch self {
            case .debug: 7
            case .info: 6
            case .warn: 4
            case .error: 3
            }
        }

        public var description: String {
            switch self {
            case .debug: "debug"
            case .info: "info"
            case .warn: "warn"
            case .error: "error"
            }
        }
    }

    /// How a line looks.
    public enum Format: Sendable {
        /// For a terminal or a file: a UTC stamp, the level's name, the message.
        case plain
        /// For the systemd journal: a syslog priority prefix (`<7>` debug, `<6>` info, `<4>` warn,
        /// `<3>` error) that journald turns into the entry's priority, and no stamp (the journal
        /// stamps each entry). Never colours: no line of either format has any.
        case journal

        /// `.journal` when standard error is the journal's stream: systemd sets `JOURNAL_STREAM`
        /// to its `device:inode`, and a node whose stderr was redirected since (a pipe, a file)
        /// no longer matches (systemd.exec(5)).
        public static func detect(
            environment: [String: String] = ProcessInfo.processInfo.environment, descriptor: Int32 = 2
        ) -> Format {
            guard let stream = environment["JOURNAL_STREAM"] else { return .plain }
            let parts = stream.split(separator: ":")
            guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return .plain }
            var info = stat()
            guard fstat(descriptor, &info) == 0 else { return .plain }
            return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode ? .journal : .plain
        }
    }

    public let level: Level
    public let format: Format
    private let sink: @Sendable (String) -> Void
    /// Shared by every copy of this log (the node's handlers hold copies).
    private let limiter: SharedLimiter
    /// Milliseconds on a monotonic clock, for the limiter's windows.
    private let now: @Sendable () -> UInt64

    /// A log writing lines of `level` and above in `format` to `sink` (default: standard error),
    /// lines of a `LogKind` within `limits`, timed by `now` (default: the monotonic clock).
    public init(
        level: Level = .info, format: Format = .plain, limits: LogLimiter = LogLimiter(),
        sink: @escaping @Sendable (String) -> Void = NodeLog.standardError,
        now: @escaping @Sendable () -> UInt64 = NodeLog.monotonicMillis
    ) {
        self.level = level
        self.format = format
        self.sink = sink
        self.limiter = SharedLimiter(limits)
        self.now = now
    }

    /// Discards everything.
    public static let silent = NodeLog(level: .error, sink: { _ in })

    // Lines only local actions cause: not limited.
    public func debug(_ message: @autoclosure () -> String) { write(.debug, message) }
    public func info(_ message: @autoclosure () -> String) { write(.info, message) }
    public func warn(_ message: @autoclosure () -> String) { write(.warn, message) }
    public func error(_ message: @autoclosure () -> String) { write(.error, message) }

    // Lines the network can cause: limited per kind.
    public func debug(_ kind: LogKind, _ message: @autoclosure () -> String) { write(.debug, kind, message) }
    public func info(_ kind: LogKind, _ message: @autoclosure () -> String) { write(.info, kind, message) }
    public func warn(_ kind: LogKind, _ message: @autoclosure () -> String) { write(.warn, kind, message) }
    public func error(_ kind: LogKind, _ message: @autoclosure () -> String) { write(.error, kind, message) }

    /// Writes the summary of the limiter's window if it has closed (if it is open at all when
    /// `all`, at shutdown). The node calls it every second, so a summary comes at most a second
    /// after its window closed even when no further line arrives.
    public func writeSummaries(all: Bool = false) {
        let time = now()
        let summary = limiter.mutex.withLock { $0.closeWindow(now: time, all: all) }
        if let summary, summary.level >= level { emit(summary.level, summary.text) }
    }

    private func write(_ level: Level, _ message: () -> String) {
        guard level >= self.level else { return }
        emit(level, message())
    }

    private func write(_ level: Level, _ kind: LogKind, _ message: () -> String) {
        guard level >= self.level else { return }
        let time = now()
        let (summary, admitted) = limiter.mutex.withLock { $0.admit(kind, level: level, now: time) }
        if let summary, summary.level >= self.level { emit(summary.level, summary.text) }
        if admitted { emit(level, message()) }
    }

    /// Writes one line; what it quotes from the network (a nick, an error's text) is made fit
    /// for a terminal, as all text output is (`TerminalText`).
    private func emit(_ level: Level, _ message: String) {
        switch format {
        case .plain:
            let name = level.description
            sink("\(Self.stamp()) \(name)\(String(repeating: " ", count: 6 - name.count))\(TerminalText.line(message))")
        case .journal:
            sink("<\(level.syslogPriority)>\(TerminalText.line(message))")
        }
    }

    /// Milliseconds since an arbitrary point (`CLOCK_MONOTONIC`): never goes back.
    @Sendable public static func monotonicMillis() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000 + UInt64(now.tv_nsec / 1_000_000)
    }

    /// `time` (Unix seconds and nanoseconds, default now) as `2026-01-01T12:00:00.123Z`, from
    /// `gmtime_r`: `ISO8601DateFormatter.string(from:…)` built a formatter per line, 640,000
    /// instructions each (callgrind), paid at every link change.
    static func stamp(_ time: timespec? = nil) -> String {
        var now = time ?? timespec()
        if time == nil { clock_gettime(CLOCK_REALTIME, &now) }
        var parts = tm()
        var seconds = now.tv_sec
        gmtime_r(&seconds, &parts)
        func digits(_ value: Int32, _ count: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, count - text.count)) + text
        }
        return digits(parts.tm_year + 1900, 4) + "-" + digits(parts.tm_mon + 1, 2) + "-" + digits(parts.tm_mday, 2) + "T"
            + digits(parts.tm_hour, 2) + ":" + digits(parts.tm_min, 2) + ":" + digits(parts.tm_sec, 2) + "."
            + digits(Int32(now.tv_nsec / 1_000_000), 3) + "Z"
    }

    private static let lock = Mutex(())

    /// Writes `line` and a newline to file descriptor 2 in one call.
    @Sendable public static func standardError(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        lock.withLock { _ in
            bytes.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let written = Foundation.write(2, raw.baseAddress! + offset, raw.count - offset)
                    if written <= 0 { return }
                    offset += written
                }
            }
        }
    }
}

/// The limiter that copies of one `NodeLog` share (a `Mutex` cannot be copied with the struct).
private final class SharedLimiter: Sendable {
    let mutex: Mutex<LogLimiter>

    init(_ limiter: LogLimiter) { mutex = Mutex(limiter) }
}
