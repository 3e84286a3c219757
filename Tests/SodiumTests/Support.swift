import Sodium
import Testing

/// The bytes of a hex test vector; white space is ignored so long vectors can be split.
func hexBytes(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [UInt8] {
    try #require(Sodium.bytes(hex: String(text.filter { !$0.isWhitespace })), sourceLocation: sourceLocation)
}

/// `bytes` with bit `bit` of byte `index` flipped.
func flipping(_ bytes: [UInt8], at index: Int, bit: UInt8 = 0) -> [UInt8] {
    var copy = bytes
    copy[index] ^= 1 << bit
    return copy
}

/// The UTF-8 bytes of `text`.
func utf8(_ text: String) -> [UInt8] { Array(text.utf8) }
