/// How many terminal columns text takes, as the terminal draws it: wide East Asian characters
/// and emoji take 2, combining marks and zero-width format characters 0, everything else 1, as
/// ncursesw's `wcwidth` counts them. Regional indicators count 1 each, as glibc's `wcwidth`
/// does: a flag (two of them) takes the 2 columns terminals draw it in.
///
/// An emoji sequence — people joined by U+200D into a family, a hand with a skin tone — is one
/// glyph 2 columns wide where the terminal joins it (tmux joins ZWJ sequences, not skin tones),
/// and the sum of its parts where it does not. `Terminal` asks the terminal which it does before
/// it takes the screen, and the chat lays out under that answer (`$emojiJoining`); the default,
/// the sum of the parts, is how curses itself counts.
public enum DisplayWidth {
    /// Which emoji sequences the terminal draws as one glyph.
    public struct EmojiJoining: Sendable, Equatable {
        /// Sequences joined by U+200D (a family, a profession).
        public var zeroWidthJoiner: Bool
        /// A person or hand followed by a skin tone (U+1F3FB–1F3FF).
        public var skinTone: Bool

        public init(zeroWidthJoiner: Bool, skinTone: Bool) {
            self.zeroWidthJoiner = zeroWidthJoiner
            self.skinTone = skinTone
        }

        /// No sequence joined: each part as wide as `wcwidth` says, as curses counts.
        public static let none = EmojiJoining(zeroWidthJoiner: false, skinTone: false)
    }

    /// The joining rule of the terminal the text is laid out for.
    @TaskLocal public static var emojiJoining = EmojiJoining.none

    /// The columns of one scalar.
    public static func of(_ scalar: Unicode.Scalar) -> Int {
        let value = scalar.value
        if value < 0x20 || (0x7F..<0xA0).contains(value) { return 0 }
        if value < 0x300 { return 1 }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        if (0x1160...0x11FF).contains(value) || value == 0x200B { return 0 }
        if (0x1F1E6...0x1F1FF).contains(value) { return 1 }
        if isWide(value) { return 2 }
        return 1
    }

    /// The columns of one grapheme: 2 for an emoji sequence the terminal joins, else the sum of
    /// its scalars' widths (where curses puts the cursor after writing them).
    public static func of(_ character: Character) -> Int {
        let scalars = character.unicodeScalars
        if scalars.count > 1, isJoinedSequence(character) { return 2 }
        return scalars.reduce(0) { $0 + of($1) }
    }

    /// The columns of `text`.
    public static func of(_ text: some StringProtocol) -> Int {
        if emojiJoining == .none { return text.unicodeScalars.reduce(0) { $0 + of($1) } }
        return text.reduce(0) { $0 + of($1) }
    }

    /// Whether the terminal draws `character` as one emoji glyph 2 columns wide while curses
    /// would count its parts: a sequence of emoji whose every kind of joining the terminal does.
    public static func isJoinedSequence(_ character: Character) -> Bool {
        let joining = emojiJoining
        guard joining != .none, let first = character.unicodeScalars.first, first.properties.isEmoji else { return false }
        var joiner = false
        var skinTone = false
        for scalar in character.unicodeScalars {
            if scalar.value == 0x200D { joiner = true }
            if (0x1F3FB...0x1F3FF).contains(scalar.value) { skinTone = true }
        }
        guard joiner || skinTone else { return false }
        return (!joiner || joining.zeroWidthJoiner) && (!skinTone || joining.skinTone)
    }

    /// East Asian Wide and Fullwidth ranges, and emoji shown as pictures by default.
    private static func isWide(_ value: UInt32) -> Bool {
        if let scalar = Unicode.Scalar(value), scalar.properties.isEmojiPresentation { return true }
        switch value {
        case 0x1100...0x115F, 0x2329...0x232A, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF,
            0xA000...0xA4CF, 0xA960...0xA97F, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F,
            0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x2FFFD, 0x30000...0x3FFFD:
            return true
        default:
            return false
        }
    }

    /// The longest prefix of `text` that fits in `columns`, and its width.
    public static func prefix(_ text: some StringProtocol, fitting columns: Int) -> (text: String, width: Int) {
        var result = ""
        var width = 0
        for character in text {
            let next = of(character)
            if width + next > columns { break }
            result.append(character)
            width += next
        }
        return (result, width)
    }

    /// `text` cut to `columns` (with `…` when cut) and padded with spaces to exactly `columns`.
    public static func fit(_ text: some StringProtocol, _ columns: Int, ellipsis: Bool = true) -> String {
        guard columns > 0 else { return "" }
        let total = of(text)
        if total <= columns { return String(text) + String(repeating: " ", count: columns - total) }
        let cut = prefix(text, fitting: ellipsis ? columns - 1 : columns)
        let tail = ellipsis ? "…" : ""
        return cut.text + tail + String(repeating: " ", count: columns - cut.width - (ellipsis ? 1 : 0))
    }
}
