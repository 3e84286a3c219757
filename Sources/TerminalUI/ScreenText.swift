import Presentation

/// Text fit to reach the terminal. Everything that came from the network (messages, nicks, room
/// and conversation names, statuses, attachment names) passes through `clean` before it is
/// drawn, so a peer can never send the terminal an escape sequence: no retitled window, no
/// cleared screen, no cursor moved, no bell.
public enum ScreenText {
    /// `text` cleaned by the rule every text output follows (`Format.safe`, `TerminalText.clean`: control
    /// characters, bidirectional overrides and separators become U+FFFD), and tabs a space (the
    /// layout measures every cell). Newlines are kept when `keepNewlines` (the wrapper breaks
    /// lines there), else they become U+FFFD.
    public static func clean(_ text: String, keepNewlines: Bool = true) -> String {
        var result = String.UnicodeScalarView()
        for scalar in Format.safe(text, keepNewlines: keepNewlines).unicodeScalars {
            result.append(scalar == "\t" ? " " : scalar)
        }
        return String(result)
    }

    /// `clean` on one line: newlines become U+FFFD too (names, statuses, titles).
    public static func line(_ text: String) -> String { clean(text, keepNewlines: false) }
}
