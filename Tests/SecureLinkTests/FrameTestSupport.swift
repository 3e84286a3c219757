import SecureLink
import Sodium
import TestSupport
import Testing

/// A 32-byte secretstream key.
func streamKey() -> SecureBytes { SecureBytes.random(SecretStream.keyBytes) }

/// The wire bytes of one direction: the header, then one encoded frame per entry of `frames`.
/// Each frame's bytes are also returned separately, for reordering and dropping.
func encodeStream(
    _ frames: [[UInt8]], key: SecureBytes, configuration: FrameConfiguration = FrameConfiguration(),
    goodbye: Bool = false
) throws -> (header: [UInt8], frames: [[UInt8]]) {
    var encoder = FrameEncoder(key: key, configuration: configuration)
    var encoded = try frames.map { plaintext throws(FrameError) in try encoder.encode(plaintext) }
    if goodbye { encoded.append(try encoder.encodeGoodbye()) }
    return (encoder.header, encoded)
}

/// Every event a decoder yields from `bytes` fed in pieces of the given sizes (the last piece
/// takes the rest), draining `next()` after each piece as a shell does.
func decodeAll(
    _ bytes: [UInt8], key: SecureBytes, pieces: [Int] = [],
    configuration: FrameConfiguration = FrameConfiguration()
) throws(FrameError) -> [FrameEvent] {
    var decoder = FrameDecoder(key: key, configuration: configuration)
    var events: [FrameEvent] = []
    var offset = 0
    var sizes = pieces[...]
    while offset < bytes.count {
        let size = min(sizes.popFirst() ?? bytes.count, bytes.count - offset)
        decoder.feed(bytes[offset..<offset + size])
        offset += size
        while let event = try decoder.next() { events.append(event) }
    }
    return events
}

/// The error `decodeAll` throws for `bytes`, or nil when it decodes cleanly.
func decodingError(_ bytes: [UInt8], key: SecureBytes, configuration: FrameConfiguration = FrameConfiguration()) -> FrameError? {
    do {
        _ = try decodeAll(bytes, key: key, configuration: configuration)
        return nil
    } catch {
        return error
    }
}

/// `count` random bytes drawn from `generator`.
func randomBytes(_ count: Int, using generator: inout SeededRandom) -> [UInt8] {
    (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
}
