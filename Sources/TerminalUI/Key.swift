/// A key press, as the screen reads it (curses key codes translated) and the model handles it.
public enum Key: Equatable, Sendable {
    /// A printable character (never a control character).
    case character(Character)
    case enter, backspace, delete, left, right, up, down, home, end, pageUp, pageDown, tab
    /// Ctrl and a letter (`.control("a")`), for the editing keys readline users expect.
    case control(Character)
    /// The terminal changed size.
    case resize
    /// ESC alone or a key the chat does not use.
    case ignored

    /// The key for a character code read in "character" mode (not a function key).
    public static func fromCharacter(_ value: UInt32) -> Key {
        switch value {
        case 0x0A, 0x0D: return .enter
        case 0x08, 0x7F: return .backspace
        case 0x09: return .tab
        case 0x01...0x1A:
            return .control(Character(Unicode.Scalar(value + 0x60)!))
        case 0x00..<0x20, 0x80..<0xA0: return .ignored
        default:
            guard let scalar = Unicode.Scalar(value) else { return .ignored }
            return .character(Character(scalar))
        }
    }
}
