/// Text fit for a terminal, the one rule every text output follows: the CLI's commands, the
/// chat's screen, the node's log. Anything that came from the network (messages, nicks, names,
/// statuses, titles, attachment names) may hold characters a terminal acts on rather than shows.
/// JSON output carries the exact text instead, escaped.
public enum TerminalText {
    /// `text` with each of these replaced by U+FFFD:
    /// - every C0 and C1 control and DEL (ESC among them: escape sequences could retitle the
    ///   window, clear the screen, move the cursor; CR could overwrite the line), except a tab,
    ///   and a newline when `keepNewlines`;
    /// - the bidirectional marks, embeddings, overrides and isolates (U+200E, U+200F,
    ///   U+202A–U+202E, U+2066–U+2069, U+061C): they reorder what follows on the line, so a
    ///   message could show text other than it holds (the "Trojan Source" trick);
    /// - the line and paragraph separators (U+2028, U+2029) and the interlinear annotation
    ///   controls (U+FFF9–U+FFFB), which terminals treat in their own ways.
    public static func clean(_ text: String, keepNewlines: Bool = true) -> String {
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            result.append(isAllowed(scalar, keepNewlines: keepNewlines) ? scalar : "\u{FFFD}")
        }
        return String(result)
    }

    /// `clean` for one line: a newline becomes U+FFFD too (names, statuses, titles, log lines).
    public static func line(_ text: String) -> String { clean(text, keepNewlines: false) }

    private static func isAllowed(_ scalar: Unicode.Scalar, keepNewlines: Bool) -> Bool {
        switch scalar.value {
        case 0x09: return true
        case 0x0A: return keepNewlines
        case 0x00...0x1F, 0x7F...0x9F: return false
        case 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069, 0x061C, 0x2028, 0x2029, 0xFFF9...0xFFFB: return false
        default: return true
        }
    }
}
