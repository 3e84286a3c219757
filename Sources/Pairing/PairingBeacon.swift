import Wire

/// The UDP datagram a pairing host sends every 0.5 s while it waits for a guest.
///
/// | bytes | field |
/// |---|---|
/// | 8 | magic `PRLYPAIR` |
/// | 1 | version (1) |
/// | 2 | tag: the code's first two characters, ASCII |
/// | 2 | the host's TCP port, big-endian |
///
/// 13 bytes; no address inside (the guest dials the datagram's source). The tag is all a
/// listener learns of the code: 10 of its 50 bits.
struct PairingBeacon: Equatable {
    static let magic: [UInt8] = Array("PRLYPAIR".utf8)
    static let version: UInt8 = 1
    static let size = 13

    let tag: [UInt8]
    let port: UInt16

    init(tag: [UInt8], port: UInt16) {
        precondition(tag.count == PairingCode.tagLength)
        self.tag = tag
        self.port = port
    }

    /// Decodes a datagram; nil for anything malformed (wrong size, magic or version, port 0).
    init?(decoding bytes: [UInt8]) {
        guard bytes.count == Self.size else { return nil }
        var reader = ByteReader(bytes)
        guard (try? reader.raw(Self.magic.count, "magic")) == Self.magic, (try? reader.u8("version")) == Self.version,
            let tag = try? reader.raw(PairingCode.tagLength, "tag"), let port = try? reader.u16("port"), port != 0
        else { return nil }
        self.tag = tag
        self.port = port
    }

    var encoded: [UInt8] {
        var writer = ByteWriter(capacity: Self.size)
        writer.raw(Self.magic)
        writer.u8(Self.version)
        writer.raw(tag)
        writer.u16(port)
        return writer.bytes
    }
}
