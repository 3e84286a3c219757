/// What a line typed into the chat means: a message for the open room or conversation, or an
/// IRC-style command (`/join dev`). Pure, so the parsing rules have fast tests.
public enum ChatInput: Equatable, Sendable {
    /// Text to send (a line not starting with `/`, or starting with `//`, which sends one `/`).
    case message(String)
    /// `/name args`: `name` lowercased without the slash; `arguments` split like a shell does
    /// (quotes group words); `rest` is everything after the name, as typed (for texts).
    case command(name: String, arguments: [String], rest: String)
    /// Nothing but whitespace.
    case empty

    public init(parsing line: String) {
        let trimmed = line.trimmingSpaces()
        guard !trimmed.isEmpty else {
            self = .empty
            return
        }
        guard line.first == "/" else {
            self = .message(line)
            return
        }
        if line.hasPrefix("//") {
            self = .message(String(line.dropFirst()))
            return
        }
        let body = line.dropFirst()
        let name = body.prefix { $0 != " " }
        let rest = String(body.dropFirst(name.count)).trimmingSpaces()
        self = .command(name: name.lowercased(), arguments: Self.split(rest), rest: rest)
    }

    /// Words separated by spaces; "double" or 'single' quotes keep spaces inside a word, and a
    /// backslash takes the next character as it is. An unclosed quote runs to the end.
    public static func split(_ text: String) -> [String] {
        var words: [String] = []
        var word = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        for character in text {
            if escaped {
                word.append(character)
                escaped = false
                inWord = true
                continue
            }
            if character == "\\" && quote != "'" {
                escaped = true
                continue
            }
            if let open = quote {
                if character == open { quote = nil } else { word.append(character) }
                continue
            }
            if character == "\"" || character == "'" {
                quote = character
                inWord = true
                continue
            }
            if character == " " {
                if inWord { words.append(word) }
                word = ""
                inWord = false
                continue
            }
            word.append(character)
            inWord = true
        }
        if inWord || escaped { words.append(word) }
        return words
    }
}

extension String {
    /// The text without leading and trailing spaces.
    func trimmingSpaces() -> String {
        guard let start = firstIndex(where: { $0 != " " }), let end = lastIndex(where: { $0 != " " }) else { return "" }
        return String(self[start...end])
    }
}
