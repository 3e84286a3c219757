/// Where text that should be UTF-8 is not: for a clear refusal ("byte 0xE9 at offset 13") where
/// `String(decoding:as:)` would silently put U+FFFD in place of the bad bytes.
public enum UTF8Validation {
    /// The offset of the first byte of `bytes` that does not belong to valid UTF-8; nil when all do.
    public static func firstInvalidOffset(_ bytes: [UInt8]) -> Int? {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        var offset = 0
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): offset += UTF8.width(scalar)
            case .emptyInput: return nil
            case .error: return offset
            }
        }
    }

    /// `byte` as `0xE9`.
    public static func hex(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16, uppercase: true)
        return "0x" + (digits.count == 1 ? "0" : "") + digits
    }
}
