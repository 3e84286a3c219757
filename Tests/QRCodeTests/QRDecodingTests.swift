import QRCode
import Testing

/// Round trips through a real decoder (zxing-cpp): the symbol, its terminal lines as a screen
/// shows them and its SVG as drawn all read back as the text, at level M. The decoder looks for
/// upright dark-on-light codes only, so a rendering with the wrong polarity fails.
@Suite(.enabled(if: QRDecoder.shouldRun, QRDecoder.missing), .timeLimit(.minutes(2)))
struct QRDecodingTests {
    static let texts = [
        "parley-pair:abcde-fghij@127.0.0.1:7748",
        "Parley pairs DEVICES, and keeps the Case",
        "café ☕ 日本語 👋",
        "1",
        String(repeating: "0123456789abcdef", count: 60),
    ]

    @Test func theSymbol_decodesToItsText() async throws {
        let symbols = try Self.texts.map { try QRSymbol(encoding: $0) }
        let decoded = try await QRDecoder.decode(symbols.map { GreyImage(grid: Renderings.padded($0)) })
        for (text, result) in zip(Self.texts, decoded) {
            #expect(result?.bytes == Array(text.utf8), "\(text)")
            #expect(result?.level == "M")
        }
    }

    @Test func bytes_includingNUL_decodeAsThemselves() async throws {
        let bytes: [UInt8] = [0, 1, 2, 0x7f, 0x80, 0xfe, 0xff, 0]
        let decoded = try await QRDecoder.decode([GreyImage(grid: Renderings.padded(try QRSymbol(encoding: bytes)))])
        #expect(decoded.first??.bytes == bytes)
    }

    /// The default lines on a dark terminal and the inverted ones on a light terminal read as
    /// the text; the default lines on a light terminal are a light-on-dark code, which the
    /// decoder (like many phone readers) does not read — the polarity is what the default is for.
    @Test func terminalLines_onTheirBackground_decodeToTheText() async throws {
        let symbols = try Self.texts.map { try QRSymbol(encoding: $0) }
        var images: [GreyImage] = []
        for symbol in symbols {
            images.append(try Renderings.screen(symbol.terminalLines(), darkBackground: true))
            images.append(try Renderings.screen(symbol.terminalLines(inverted: true), darkBackground: false))
            images.append(try Renderings.screen(symbol.terminalLines(), darkBackground: false))
        }
        let decoded = try await QRDecoder.decode(images)
        for (index, text) in Self.texts.enumerated() {
            #expect(decoded[3 * index]?.bytes == Array(text.utf8), "default lines on a dark terminal: \(text)")
            #expect(decoded[3 * index + 1]?.bytes == Array(text.utf8), "inverted lines on a light terminal: \(text)")
            #expect(decoded[3 * index + 2] == nil, "default lines on a light terminal are light on dark: \(text)")
        }
    }

    @Test func svg_asDrawn_decodesToTheText() async throws {
        let symbols = try Self.texts.map { try QRSymbol(encoding: $0) }
        let images = try symbols.map { GreyImage(grid: try Renderings.svgModules($0.svg()).dark) }
        let decoded = try await QRDecoder.decode(images)
        for (text, result) in zip(Self.texts, decoded) {
            #expect(result?.bytes == Array(text.utf8), "\(text)")
        }
    }
}
