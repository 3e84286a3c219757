import Foundation
import Synchronization

/// Levelled log lines on standard error (or any sink): `2026-01-01T12:00:00.123Z info  message`.
///
/// What is logged: peers appearing, linking and leaving (as `nick#short` and an address), bans,
/// startup and shutdown. Never keys or secrets. Sendable: lines are written whole under a lock.
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

        public var description: String {
            switch self {
            case .debug: "debug"
            case .info: "info"
            case .warn: "warn"
            case .error: "error"
            }
        }
    }

    public let level: Level
    private let sink: @Sendable (String) -> Void

    /// A log writing lines of `level` and above to `sink` (default: standard error).
    public init(level: Level = .info, sink: @escaping @Sendable (String) -> Void = NodeLog.standardError) {
        self.level = level
        self.sink = sink
    }

    /// Discards everything.
    public static let silent = NodeLog(level: .error, sink: { _ in })

    public func debug(_ message: @autoclosure () -> String) { write(.debug, message) }
    public func info(_ message: @autoclosure () -> String) { write(.info, message) }
    public func warn(_ message: @autoclosure () -> String) { write(.warn, message) }
    public func error(_ message: @autoclosure () -> String) { write(.error, message) }

    private func write(_ level: Level, _ message: () -> String) {
        guard level >= self.level else { return }
        let name = level.description
        sink("\(Self.stamp()) \(name)\(String(repeating: " ", count: 6 - name.count))\(message())")
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
