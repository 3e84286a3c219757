import Identity
import Replica

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Formatting shared by the commands' text and JSON output.
public enum Format {
    /// `2026-01-01T12:03:04.567Z`: ISO 8601 in UTC with milliseconds (the JSON `time` field).
    public static func isoTime(millis: UInt64) -> String {
        var seconds = time_t(millis / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return "\(pad(Int(parts.tm_year) + 1900, 4))-\(pad(Int(parts.tm_mon) + 1))-\(pad(Int(parts.tm_mday)))"
            + "T\(pad(Int(parts.tm_hour))):\(pad(Int(parts.tm_min))):\(pad(Int(parts.tm_sec))).\(pad(Int(millis % 1000), 3))Z"
    }

    /// `12:03` for a time today, `2026-01-01 12:03` otherwise, in local time: what a person
    /// scanning a chat wants to see.
    public static func shortTime(millis: UInt64, nowMillis: UInt64) -> String {
        let time = localParts(millis)
        let now = localParts(nowMillis)
        let clock = "\(pad(Int(time.tm_hour))):\(pad(Int(time.tm_min)))"
        if time.tm_year == now.tm_year && time.tm_yday == now.tm_yday { return clock }
        return "\(pad(Int(time.tm_year) + 1900, 4))-\(pad(Int(time.tm_mon) + 1))-\(pad(Int(time.tm_mday))) \(clock)"
    }

    private static func localParts(_ millis: UInt64) -> tm {
        var seconds = time_t(millis / 1000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        return parts
    }

    /// `value` with leading zeros up to `width` digits.
    public static func pad(_ value: Int, _ width: Int = 2) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    /// `alice#k3v9q2`, or `#k3v9q2` for someone who set no nickname.
    public static func person(_ user: UserID, nick: String?) -> String {
        guard let nick, !nick.isEmpty else { return "#" + user.short }
        return user.display(nick: safe(nick, keepNewlines: false))
    }

    /// `text` fit for a terminal (`TerminalText.clean`: control characters and bidirectional
    /// overrides become U+FFFD; newlines stay if asked). Only text output is cleaned; JSON
    /// carries the exact text, escaped.
    public static func safe(_ text: String, keepNewlines: Bool = true) -> String {
        TerminalText.clean(text, keepNewlines: keepNewlines)
    }

    /// `1.2 KiB`-style sizes for attachments.
    public static func byteCount(_ bytes: UInt64) -> String {
        if bytes < 1024 { return "\(bytes) B" }
        let units = ["KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return String(Int((value * 10).rounded()) / 10) + "." + String(Int((value * 10).rounded()) % 10) + " " + units[unit]
    }

    /// The length of the short ids shown by `--ids`: 10 base32 characters (50 bits) make a
    /// collision between messages practically impossible, and 8 is the shortest prefix accepted.
    public static let shortIDLength = 10

    /// A message or task id shortened for people (still accepted as a prefix by commands).
    public static func shortID(_ id: OpID) -> String { String(id.text.prefix(shortIDLength)) }
}
