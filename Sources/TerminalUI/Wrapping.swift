/// Breaking text into lines of a given display width.
public enum Wrapping {
    /// `text` broken into lines at most `width` columns wide: at newlines, else at the last
    /// space that fits, else (a word longer than a line) between graphemes. Lines after the
    /// first are `indent` columns narrower (the caller indents them). Never returns no lines.
    public static func lines(_ text: String, width: Int, indent: Int = 0) -> [String] {
        var lines = Lines(first: max(1, width), later: max(1, width - indent))
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            for word in words(paragraph) { lines.add(word) }
            lines.breakLine(force: true)
        }
        return lines.done
    }

    /// Runs of non-spaces and single spaces, in order.
    private static func words(_ paragraph: Substring) -> [Substring] {
        var result: [Substring] = []
        var start = paragraph.startIndex
        var index = paragraph.startIndex
        while index < paragraph.endIndex {
            if paragraph[index] == " " {
                if start < index { result.append(paragraph[start..<index]) }
                let next = paragraph.index(after: index)
                result.append(paragraph[index..<next])
                start = next
            }
            index = paragraph.index(after: index)
        }
        if start < paragraph.endIndex { result.append(paragraph[start...]) }
        return result
    }

    private struct Lines {
        let first: Int
        let later: Int
        var done: [String] = []
        var line = ""
        var width = 0
        /// The current line began because the previous one was full: a space there is dropped.
        var wrapped = false

        var limit: Int { done.isEmpty ? first : later }

        mutating func breakLine(force: Bool = false) {
            guard force || !line.isEmpty else { return }
            while line.last == " " && line.count > 1 { line.removeLast() }
            done.append(line)
            line = ""
            width = 0
            wrapped = !force
        }

        mutating func add(_ word: Substring) {
            let columns = DisplayWidth.of(word)
            if word == " " && line.isEmpty && wrapped { return }
            if width + columns <= limit {
                line += word
                width += columns
                return
            }
            if word == " " {
                breakLine()
                return
            }
            breakLine()
            if columns <= limit {
                line = String(word)
                width = columns
                return
            }
            for character in word {
                let next = DisplayWidth.of(character)
                if width + next > limit && !line.isEmpty { breakLine() }
                line.append(character)
                width += next
            }
        }
    }
}
