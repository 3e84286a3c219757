import Replica

/// The rules for what a person types that every interface applies alike (the command line, the
/// terminal chat, the web API): each returns nil when the text is fine, else what is wrong with
/// it, in words that fit after "the nickname …" or "a reaction …".
public enum Validation {
    /// The longest nickname accepted, in characters: it is shown before `#xxxxxx` on every line.
    public static let maximumNickLength = 32

    /// A nickname (already trimmed): 1–32 characters, no spaces, control characters or `#` (the
    /// `#` separates the nick from the id suffix in `alice#k3v9q2`).
    public static func nicknameProblem(_ nick: String) -> String? {
        if nick.isEmpty { return "is empty" }
        if nick.count > maximumNickLength { return "is longer than \(maximumNickLength) characters" }
        let forbidden = nick.unicodeScalars.contains {
            $0.properties.isWhitespace || $0.properties.generalCategory == .control || $0 == "#"
        }
        return forbidden ? "cannot contain spaces, control characters or '#'" : nil
    }

    /// A reaction (already trimmed): one emoji or a short word, no spaces, at most 32 bytes.
    public static func reactionProblem(_ emoji: String) -> String? {
        guard !emoji.isEmpty, !emoji.unicodeScalars.contains(where: { $0.properties.isWhitespace }),
            emoji.utf8.count <= BodyLimits.emojiBytes
        else { return "must be one emoji or a short word without spaces (at most \(BodyLimits.emojiBytes) bytes)" }
        return nil
    }

    /// A conversation name (already trimmed): not empty, at most 128 bytes.
    public static func conversationNameProblem(_ name: String) -> String? {
        if name.isEmpty { return "is empty" }
        if name.utf8.count > BodyLimits.nameBytes { return "is over \(BodyLimits.nameBytes) bytes; choose a shorter one" }
        return nil
    }
}
