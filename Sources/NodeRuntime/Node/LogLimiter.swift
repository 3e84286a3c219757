/// A kind of log line that input from the network can cause (a beacon, a connection, a peer's
/// message, a store error while applying what a peer sent). Each kind is rate-limited on its own
/// by `LogLimiter`, so nobody on the LAN can make a node fill its disk or its operator's screen
/// with log lines.
///
/// The set is closed and named here: a name never comes from the network (it could be made to
/// grow the limiter's table), and the names are what a summary line shows.
public struct LogKind: Hashable, Sendable, CustomStringConvertible {
    public let name: String

    private init(_ name: String) { self.name = name }

    public var description: String { name }

    // Discovery.
    static let discovered = LogKind("discovered")
    static let peerState = LogKind("peer state")
    static let forgotten = LogKind("forgotten")
    static let duplicateIdentity = LogKind("duplicate identity")
    // Links.
    static let dialFailed = LogKind("dial failed")
    static let keyProbe = LogKind("key probe")
    static let refused = LogKind("refused")
    static let handshakeFailed = LogKind("handshake failed")
    static let linked = LogKind("linked")
    static let unlinked = LogKind("unlinked")
    static let goodbye = LogKind("goodbye")
    static let violation = LogKind("protocol violation")
    static let banned = LogKind("banned")
    static let storeFailed = LogKind("store failed")
    static let ignored = LogKind("ignored message")
    // Sync.
    static let syncFailed = LogKind("sync failed")
    static let syncProgress = LogKind("sync progress")
    static let noSync = LogKind("no sync")
    static let fork = LogKind("fork")
    static let partitionOffered = LogKind("partition offered")
    static let invited = LogKind("invited")
    static let blob = LogKind("blob")
    static let clock = LogKind("clock")
}

/// At most `linesPerKind` lines of one `LogKind`, and `linesInAll` of all kinds together, per
/// window of `windowMillis`; the rest are counted, and one summary line says what was left out
/// once the window closed ("… 3,512 more lines in the last 10 s, not shown: 3,400 'duplicate
/// identity', 112 'discovered'"). So whatever arrives from the network, the log grows by at
/// most `linesInAll + 1` lines per window.
///
/// A window opens at the first limited line and closes `windowMillis` later; the next line opens
/// a new one. Pure and deterministic: the caller passes the time (milliseconds on a monotonic
/// clock) and writes what it is told; `NodeLog` holds one behind a lock.
public struct LogLimiter: Sendable {
    /// Lines of one kind written per window, at most.
    public let linesPerKind: Int
    /// Lines of every kind together written per window, at most.
    public let linesInAll: Int
    /// How long a window lasts.
    public let windowMillis: UInt64

    /// The open window.
    private struct Window: Sendable {
        let start: UInt64
        var written: [LogKind: Int] = [:]
        var writtenInAll = 0
        var suppressed: [LogKind: Int] = [:]
        /// The most severe level among the lines left out (the summary's level).
        var level = NodeLog.Level.debug
    }

    /// Nil while no limited line came in the last `windowMillis`. Its tables hold at most one
    /// entry per `LogKind` name.
    private var window: Window?

    public init(linesPerKind: Int = 10, linesInAll: Int = 100, windowMillis: UInt64 = 10_000) {
        precondition(linesPerKind > 0 && linesInAll > 0 && windowMillis > 0, "a limit of nothing")
        self.linesPerKind = linesPerKind
        self.linesInAll = linesInAll
        self.windowMillis = windowMillis
    }

    /// What a summary says: how many lines of each kind were left out over the last `millis` (the
    /// window's length, or less when it was closed early at shutdown).
    public struct Summary: Equatable, Sendable {
        public let level: NodeLog.Level
        /// Lines left out by kind, the most first.
        public let suppressed: [(kind: LogKind, count: Int)]
        public let millis: UInt64

        public static func == (a: Summary, b: Summary) -> Bool {
            a.level == b.level && a.millis == b.millis && a.suppressed.map(\.kind) == b.suppressed.map(\.kind)
                && a.suppressed.map(\.count) == b.suppressed.map(\.count)
        }

        /// `… 3,512 more lines in the last 10 s, not shown: 3,400 'duplicate identity', 112 'discovered'`.
        public var text: String {
            let total = suppressed.reduce(0) { $0 + $1.count }
            let seconds = (millis + 999) / 1_000
            return "… \(Self.grouped(total)) more line\(total == 1 ? "" : "s") in the last \(seconds) s, not shown: "
                + suppressed.map { "\(Self.grouped($0.count)) '\($0.kind.name)'" }.joined(separator: ", ")
        }

        /// `3512` as `3,512`.
        static func grouped(_ value: Int) -> String {
            var digits = Array(String(value))
            var index = digits.count - 3
            while index > 0 {
                digits.insert(",", at: index)
                index -= 3
            }
            return String(digits)
        }
    }

    /// A line of `kind` at `level` is to be written at `now`: whether to write it, and the
    /// summary of the window that closed before it, if any (to be written first).
    public mutating func admit(_ kind: LogKind, level: NodeLog.Level, now: UInt64) -> (summary: Summary?, write: Bool) {
        let summary = closeWindow(now: now)
        var current = window ?? Window(start: now)
        let write = current.written[kind, default: 0] < linesPerKind && current.writtenInAll < linesInAll
        if write {
            current.written[kind, default: 0] += 1
            current.writtenInAll += 1
        } else {
            current.suppressed[kind, default: 0] += 1
            current.level = max(current.level, level)
        }
        window = current
        return (summary, write)
    }

    /// The summary of the window if it closed by `now` (or, when `all`, if it is open at all: the
    /// node is stopping); nil when it is open or left nothing out. A closed window is forgotten.
    public mutating func closeWindow(now: UInt64, all: Bool = false) -> Summary? {
        guard let current = window, all || now >= current.start + windowMillis else { return nil }
        window = nil
        guard !current.suppressed.isEmpty else { return nil }
        let counts = current.suppressed.sorted { ($1.value, $0.key.name) < ($0.value, $1.key.name) }.map { (kind: $0.key, count: $0.value) }
        return Summary(level: current.level, suppressed: counts, millis: min(now > current.start ? now - current.start : 0, windowMillis))
    }
}
