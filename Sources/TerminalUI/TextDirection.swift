/// The direction a text reads in, by its first letter (Unicode's bidirectional rules P2 and P3,
/// what a page's `dir=auto` does): right to left when that letter is of a right-to-left script
/// (Hebrew, Arabic, Syriac, Thaana, N'Ko and their kin), else left to right.
///
/// The chat aligns a right-to-left message to the pane's right edge. It keeps the characters in
/// their logical order: a terminal that implements bidi (VTE, Konsole, mlterm) orders the glyphs
/// of each line itself, and reordering here as well would reverse them twice.
public enum TextDirection: Sendable, Equatable {
    case leftToRight
    case rightToLeft

    /// The direction of `text`: left to right when it holds no letter.
    public static func of(_ text: some StringProtocol) -> TextDirection {
        for scalar in text.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter:
                return isRightToLeftScript(scalar.value) ? .rightToLeft : .leftToRight
            default:
                continue
            }
        }
        return .leftToRight
    }

    /// The blocks whose letters are strongly right to left (bidi classes R and AL).
    private static func isRightToLeftScript(_ value: UInt32) -> Bool {
        switch value {
        case 0x0590...0x08FF, 0xFB1D...0xFDFF, 0xFE70...0xFEFF, 0x10800...0x10FFF, 0x1E800...0x1EFFF: true
        default: false
        }
    }
}
