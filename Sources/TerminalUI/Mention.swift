/// `@nick` in a message: an `@`, the nickname in any case, and then no letter, digit or `_`
/// (`@bob,` and `@bob.` mention bob, `@bobby` does not). The page's rule too (app.js,
/// `mentionPattern`), so both show the same messages as mentions.
public enum Mention {
    /// Whether `text` mentions `nick`.
    public static func mentions(_ text: String, nick: String) -> Bool {
        guard !nick.isEmpty else { return false }
        let characters = Array(text.lowercased())
        let wanted = Array(nick.lowercased())
        for index in characters.indices where characters[index] == "@" {
            let end = index + 1 + wanted.count
            guard end <= characters.count, characters[(index + 1)..<end].elementsEqual(wanted) else { continue }
            if end == characters.count || !continuesWord(characters[end]) { return true }
        }
        return false
    }

    private static func continuesWord(_ character: Character) -> Bool {
        character.isLetter || character.isNumber || character == "_"
    }
}
