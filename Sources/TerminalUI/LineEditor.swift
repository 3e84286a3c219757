/// The input line: text with a cursor, the editing keys of readline (Ctrl-A/E/U/K/W, arrows,
/// Home/End, Backspace/Delete) and a history of sent lines (Up/Down). Pure and unit-tested.
public struct LineEditor: Sendable, Equatable {
    /// The text, as graphemes (the cursor never stands inside one).
    public private(set) var characters: [Character] = []
    /// Index in `characters` before which the cursor stands.
    public private(set) var cursor = 0
    /// Lines sent, oldest first (at most `historyLimit`).
    public private(set) var history: [String] = []
    /// Where Up/Down stands in the history: nil on the line being written.
    private var historyIndex: Int?
    /// The line being written before Up was pressed, restored by Down past the newest entry.
    private var draft: [Character] = []
    public static let historyLimit = 200
    /// The longest line accepted, in graphemes (a message body is at most 64 KiB anyway).
    public static let maximumLength = 4000

    /// Set while the line is a secret (a room's passphrase): shown as `*`, never kept in the
    /// history.
    public var isSecret = false

    public init() {}

    public var text: String { String(characters) }
    public var isEmpty: Bool { characters.isEmpty }

    /// What a key did to the line.
    public enum Outcome: Equatable, Sendable {
        /// The line changed or the cursor moved.
        case edited
        /// Enter: the line is handed over (and kept in the history); the editor is empty again.
        case submitted(String)
        /// The key is not an editing key.
        case unhandled
    }

    public mutating func handle(_ key: Key) -> Outcome {
        switch key {
        case .character(let character):
            guard characters.count < Self.maximumLength else { return .edited }
            // Keys come a scalar at a time. One that extends the grapheme before the cursor (a
            // joiner and the emoji after it, a skin tone, an accent, a flag's second half) joins
            // it, so the cursor and Backspace move over what is drawn as one glyph.
            if cursor > 0, String([characters[cursor - 1], character]).count == 1 {
                characters[cursor - 1] = Character(String([characters[cursor - 1], character]))
            } else {
                characters.insert(character, at: cursor)
                cursor += 1
            }
        case .enter:
            let line = text
            if !isSecret, !line.isEmpty, history.last != line {
                history.append(line)
                if history.count > Self.historyLimit { history.removeFirst() }
            }
            characters = []
            cursor = 0
            historyIndex = nil
            draft = []
            return .submitted(line)
        case .backspace, .control("h"):
            guard cursor > 0 else { return .edited }
            characters.remove(at: cursor - 1)
            cursor -= 1
        case .delete, .control("d"):
            guard cursor < characters.count else { return .edited }
            characters.remove(at: cursor)
        case .left, .control("b"): cursor = max(0, cursor - 1)
        case .right, .control("f"): cursor = min(characters.count, cursor + 1)
        case .home, .control("a"): cursor = 0
        case .end, .control("e"): cursor = characters.count
        case .control("u"):
            characters.removeSubrange(0..<cursor)
            cursor = 0
        case .control("k"):
            characters.removeSubrange(cursor...)
        case .control("w"):
            var start = cursor
            while start > 0 && characters[start - 1] == " " { start -= 1 }
            while start > 0 && characters[start - 1] != " " { start -= 1 }
            characters.removeSubrange(start..<cursor)
            cursor = start
        case .up: recall(older: true)
        case .down: recall(older: false)
        default:
            return .unhandled
        }
        return .edited
    }

    /// Replaces the line (for `/edit` prefills and tests).
    /// Tab completion of the word before the cursor from `names` (nicknames): an `@` stays in
    /// front, case does not matter, one match is completed with a space after it, several to
    /// their longest common start. Returns whether the line changed; a word with no match, or
    /// no word at all, is left for the caller (the chat switches rooms then).
    public mutating func complete(from names: [String]) -> Bool {
        guard !isSecret else { return false }
        var start = cursor
        while start > 0, !characters[start - 1].isWhitespace { start -= 1 }
        var word = String(characters[start..<cursor])
        let at = word.hasPrefix("@")
        if at { word.removeFirst() }
        guard !word.isEmpty else { return false }
        let matches = Array(Set(names.filter { $0.lowercased().hasPrefix(word.lowercased()) })).sorted { ($0.lowercased(), $0) < ($1.lowercased(), $1) }
        guard let first = matches.first else { return false }
        var completion = first
        if matches.count > 1 {
            completion = matches.dropFirst().reduce(first) { common, name in
                String(zip(common, name).prefix { $0.lowercased() == $1.lowercased() }.map(\.0))
            }
            guard completion.count > word.count else { return false }
        } else {
            completion += " "
        }
        let replacement = Array((at ? "@" : "") + completion)
        characters.replaceSubrange(start..<cursor, with: replacement)
        cursor = start + replacement.count
        return true
    }

    public mutating func set(_ text: String) {
        characters = Array(text)
        cursor = characters.count
    }

    private mutating func recall(older: Bool) {
        guard !history.isEmpty else { return }
        if older {
            if historyIndex == nil {
                draft = characters
                historyIndex = history.count - 1
            } else if let index = historyIndex, index > 0 {
                historyIndex = index - 1
            }
        } else {
            guard let index = historyIndex else { return }
            historyIndex = index + 1 < history.count ? index + 1 : nil
        }
        characters = historyIndex.map { Array(history[$0]) } ?? draft
        cursor = characters.count
    }

    /// The part of the line to show in `width` columns, keeping the cursor visible, and the
    /// cursor's column in it.
    public func visible(width: Int) -> (text: String, cursorColumn: Int) {
        let width = max(2, width)
        let clean = isSecret ? characters.map { _ in "*" } : characters.map { ScreenText.line(String($0)) }
        var start = 0
        var columnsBeforeCursor = clean[0..<cursor].reduce(0) { $0 + DisplayWidth.of($1) }
        // Scroll right until the cursor fits, leaving one column for it.
        while columnsBeforeCursor > width - 1, start < cursor {
            columnsBeforeCursor -= DisplayWidth.of(clean[start])
            start += 1
        }
        var shown = ""
        var used = 0
        for character in clean[start...] {
            let columns = DisplayWidth.of(character)
            if used + columns > width { break }
            shown.append(character)
            used += columns
        }
        return (shown, columnsBeforeCursor)
    }
}
