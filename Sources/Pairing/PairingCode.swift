import Sodium

/// The short code a person types on their new device: 10 characters of Crockford's base32
/// alphabet (`0-9`, `a-z` without `i`, `l`, `o`, `u`), 50 bits.
///
/// The first two characters are the beacon's tag (docs/DESIGN.md §4.4), which anyone on the
/// network hears; the other 40 bits meet only online guesses, three per code. Codes are shown
/// as `xxxxx-xxxxx` in lowercase and read back case-insensitively, without caring for dashes or
/// spaces; the look-alikes map as Crockford's do (`o` → `0`, `i` and `l` → `1`).
public struct PairingCode: Sendable, Hashable, CustomStringConvertible {
    /// The 32 characters, in value order.
    static let alphabet: [Character] = Array("0123456789abcdefghjkmnpqrstvwxyz")
    /// Characters in a code.
    public static let length = 10
    /// Bits of entropy: `length` × log2(32).
    public static let entropyBits = length * 5
    /// Characters of the code a beacon carries.
    static let tagLength = 2

    /// The canonical characters (lowercase, no dash).
    let characters: String

    /// A fresh random code (libsodium's `randombytes_uniform`, so every character is uniform).
    public static func generate() -> PairingCode {
        var text = ""
        for _ in 0..<length { text.append(alphabet[Int(Sodium.randomUniform(UInt32(alphabet.count)))]) }
        return PairingCode(canonical: text)
    }

    init(canonical: String) {
        characters = canonical
    }

    /// Reads a code as a person typed it; nil unless it is exactly 10 code characters once dashes
    /// and spaces are dropped and look-alikes mapped.
    public init?(parsing text: String) {
        var canonical = ""
        for character in text.lowercased() {
            switch character {
            case "-", " ", "\t": continue
            case "o": canonical.append("0")
            case "i", "l": canonical.append("1")
            default:
                guard Self.alphabet.contains(character) else { return nil }
                canonical.append(character)
            }
        }
        guard canonical.count == Self.length else { return nil }
        characters = canonical
    }

    /// `xxxxx-xxxxx`.
    public var formatted: String {
        let split = characters.index(characters.startIndex, offsetBy: Self.length / 2)
        return "\(characters[..<split])-\(characters[split...])"
    }

    /// What a beacon announces of the code: its first two characters.
    var tag: [UInt8] { Array(characters.utf8.prefix(Self.tagLength)) }

    /// The code as the PAKE's password.
    var passwordBytes: [UInt8] { Array(characters.utf8) }

    /// The code's first half and an ellipsis, for a message to the person who typed it.
    var hint: String { "\(characters.prefix(Self.length / 2))-…" }

    /// Redacted to the tag: a code is a secret and must not reach a log by interpolation.
    public var description: String { "PairingCode(\(characters.prefix(Self.tagLength))…)" }
}
