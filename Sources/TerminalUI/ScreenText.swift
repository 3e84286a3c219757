import Presentation

/// Text fit to reach the terminal. Everything that came from the network (messages, nicks, room
/// and conversation names, statuses, attachment names) passes through `clean` before it is
/// drawn, so a peer can never send the terminal an escape sequence: no retitled window, no
/// cleared screen, no cursor moved, no bell.
public enum ScreenText {
    /// `text` with every C0 and C1 control character and DEL (ESC among them) replaced by
    /// U+FFFD — `Format.safe` — and, on top of it, the bidirectional embedding, override and
    /// isolate controls (which would reorder what follows on the line, the "Trojan Source"
    /// trick) and line or paragraph separators replaced too. Tabs become a space. Newlines are
    /// kept when `keepNewlines` (the wrapper breaks lines there), else they become U+FFFD.
    public static func clean(_ text: String, keepNewlines: Bool = true) -> String {
        var result = String.UnicodeScalarView()
        for scalar in Format.safe(text, keepNewlines: keepNewlines).unicodeScalars {
            switch scalar.value {
            case 0x09: result.append(" ")
            case 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069, 0x061C, 0x2028, 0x2029, 0xFFF9...0xFFFB:
                result.append("\u{FFFD}")
            default: result.append(scalar)
            }
        }
        return String(result)
    }

    /// `clean` on one line: newlines become U+FFFD too (names, statuses, titles).
    public static func line(_ text: String) -> String { clean(text, keepNewlines: false) }
}
