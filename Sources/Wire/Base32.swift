/// Lowercase RFC 4648 base32 without padding: the text form of user ids, partition ids and
/// op ids (case-insensitive on input, no ambiguous padding, safe in file names and URLs).
public enum Base32 {
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        let count = (bytes.count * 8 + 4) / 5
        // Written in place, each character computed: an id's text is made for every `author`
        // answer and log line, and appending through the alphabet array cost 3,000
        // instructions for 32 bytes.
        return String(unsafeUninitializedCapacity: count) { out in
            var (buffer, bits, written): (UInt32, UInt32, Int) = (0, 0, 0)
            for byte in bytes {
                buffer = buffer << 8 | UInt32(byte)
                bits += 8
                while bits >= 5 {
                    bits -= 5
                    out[written] = character(buffer >> bits & 31)
                    written += 1
                }
            }
            if bits > 0 {
                out[written] = character(buffer << (5 - bits) & 31)
                written += 1
            }
            return written
        }
    }

    /// The character of a 5-bit value: `a`–`z`, then `2`–`7`.
    @inline(__always) private static func character(_ value: UInt32) -> UInt8 {
        value < 26 ? UInt8(ascii: "a") &+ UInt8(truncatingIfNeeded: value) : UInt8(ascii: "2") &+ UInt8(truncatingIfNeeded: value &- 26)
    }

    /// The bytes of `text`, or nil if it has characters outside the alphabet or non-zero padding bits.
    public static func decode(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count * 5 / 8)
        var buffer: UInt32 = 0
        var bits = 0
        for c in text.utf8 {
            guard let v = value(of: c) else { return nil }
            buffer = (buffer << 5 | v) & 0xFFFF
            bits += 5
            if bits >= 8 {
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits - 8)))
                bits -= 8
            }
        }
        // Leftover bits must be zero padding, and fewer than 5, or the text was not canonical.
        guard bits < 5, buffer & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
    }

    /// The least and the greatest `byteCount` bytes whose text starts with `prefix`: the bytes
    /// of every such text lie between them, compared byte by byte, and no others do. So a store
    /// matches a typed prefix of an id as a range, without making the text of every id it holds.
    /// Nil if `prefix` has a character outside the alphabet, or sets bits past `byteCount` bytes.
    public static func prefixRange(_ prefix: String, byteCount: Int) -> (low: [UInt8], high: [UInt8])? {
        var low = [UInt8](repeating: 0, count: byteCount)
        var high = [UInt8](repeating: 0xFF, count: byteCount)
        var bit = 0
        for c in prefix.utf8 {
            guard let v = value(of: c) else { return nil }
            for shift in stride(from: 4, through: 0, by: -1) {  // the character's five bits, high first
                let isSet = (v >> UInt32(shift)) & 1 == 1
                if bit < byteCount * 8 {
                    let (byte, mask) = (bit / 8, UInt8(0x80) >> UInt8(bit % 8))
                    if isSet { low[byte] |= mask } else { high[byte] &= ~mask }
                } else if isSet {
                    return nil  // past the bytes only zero padding can follow
                }
                bit += 1
            }
        }
        return (low, high)
    }

    /// A character's five bits; either case is accepted.
    private static func value(of c: UInt8) -> UInt32? {
        switch c {
        case UInt8(ascii: "a")...UInt8(ascii: "z"): UInt32(c - UInt8(ascii: "a"))
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): UInt32(c - UInt8(ascii: "A"))
        case UInt8(ascii: "2")...UInt8(ascii: "7"): UInt32(c - UInt8(ascii: "2") + 26)
        default: nil
        }
    }
}
