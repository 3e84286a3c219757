import QRCode
import Testing

/// The symbol's structure as ISO/IEC 18004 lays it out, and the renderings read back into the
/// same modules (the decoder's round trips are in `QRDecodingTests`).
@Suite struct QRSymbolTests {
    static let pairingURI = "parley-pair:abcde-fghij@127.0.0.1:7748"

    /// Byte-mode capacities at level M (the standard's table 7): version 1 holds 14 bytes,
    /// 2 holds 26, 3 holds 42, 10 holds 213, 40 holds 2331.
    @Test(arguments: [(1, 1), (14, 1), (15, 2), (26, 2), (27, 3), (42, 3), (43, 4), (213, 10), (214, 11), (2331, 40)])
    func version_isTheSmallestThatHoldsTheBytesAtLevelM(bytes: Int, version: Int) throws {
        let symbol = try QRSymbol(encoding: [UInt8](repeating: UInt8(ascii: "a"), count: bytes))
        #expect(symbol.version == version)
        #expect(symbol.size == 17 + 4 * version)
        #expect(symbol.sizeWithQuietZone == symbol.size + 8)
        #expect(symbol.rows.count == symbol.size && symbol.rows.allSatisfy { $0.count == symbol.size })
    }

    @Test func aPairingURI_fitsVersion3() throws {
        let symbol = try QRSymbol(encoding: Self.pairingURI)
        #expect(symbol.version == 3)
        #expect(symbol.size == 29)
        #expect(symbol.terminalLines().count == 19)  // (29 + 8 + 1) / 2
        let svg = symbol.svg()
        print("pairing URI (\(Self.pairingURI.utf8.count) bytes): version \(symbol.version), SVG \(svg.utf8.count) bytes")
        print(symbol.terminalLines().joined(separator: "\n"))
    }

    @Test func tooLong_andEmpty_areRefusedWithTheLimitNamed() throws {
        #expect(throws: QRCodeError.tooLong(bytes: 2332, limit: 2331)) { try QRSymbol(encoding: String(repeating: "x", count: 2332)) }
        #expect(throws: QRCodeError.empty) { try QRSymbol(encoding: "") }
        let message = QRCodeError.tooLong(bytes: 2332, limit: 2331).description
        #expect(message.contains("2332 bytes") && message.contains("limit is 2331 bytes"))
        #expect(!message.contains("\n"))
        // The limit counts UTF-8 bytes, not characters: 1166 two-byte characters are 2332 bytes.
        #expect(throws: QRCodeError.tooLong(bytes: 2332, limit: 2331)) { try QRSymbol(encoding: String(repeating: "é", count: 1166)) }
    }

    @Test func caseIsKept() throws {
        #expect(try QRSymbol(encoding: "Parley") != QRSymbol(encoding: "parley"))
        #expect(try QRSymbol(encoding: "Parley") == QRSymbol(encoding: "Parley"))
    }

    /// The three finder patterns (7 × 7 rings with a 3 × 3 centre) with their light
    /// separators, the two timing patterns and the dark module, where the standard puts them.
    @Test(arguments: ["a", pairingURI, String(repeating: "Z", count: 300)])
    func finderAndTimingPatterns_areInPlace(text: String) throws {
        let symbol = try QRSymbol(encoding: text)
        let size = symbol.size
        for (top, left) in [(0, 0), (0, size - 7), (size - 7, 0)] {
            for row in -1...7 {
                for column in -1...7 {
                    let ring = max(abs(row - 3), abs(column - 3))
                    let expected = ring == 4 ? false : ring != 2  // separator light, ring 2 light
                    let (r, c) = (top + row, left + column)
                    guard (0..<size).contains(r), (0..<size).contains(c) else { continue }
                    #expect(symbol.isDark(row: r, column: c) == expected, "finder at \(top),\(left): module \(r),\(c)")
                }
            }
        }
        for index in 8..<(size - 8) {
            #expect(symbol.isDark(row: 6, column: index) == index.isMultiple(of: 2), "horizontal timing at \(index)")
            #expect(symbol.isDark(row: index, column: 6) == index.isMultiple(of: 2), "vertical timing at \(index)")
        }
        #expect(symbol.isDark(row: 4 * symbol.version + 9, column: 8), "the dark module")
        // Outside the symbol every module is light.
        #expect(!symbol.isDark(row: -1, column: 0) && !symbol.isDark(row: 0, column: size) && !symbol.isDark(row: size + 3, column: -4))
    }

    /// Default: a block is a light module (the quiet zone is all blocks); inverted: a block is a
    /// dark module. Either way the lines read back into exactly the symbol and its quiet zone,
    /// and the half row past the quiet zone carries no ink.
    @Test(arguments: [false, true])
    func terminalLines_readBackIntoTheModules(inverted: Bool) throws {
        for text in ["a", Self.pairingURI, String(repeating: "Parley ", count: 40)] {
            let symbol = try QRSymbol(encoding: text)
            let lines = symbol.terminalLines(inverted: inverted)
            let extent = symbol.sizeWithQuietZone
            #expect(lines.count == (extent + 1) / 2)
            #expect(lines.allSatisfy { $0.count == extent })
            let halves = try Renderings.inkedHalves(lines)
            let expected = Renderings.padded(symbol).map { row in row.map { dark in dark == inverted } }
            #expect(Array(halves.prefix(extent)) == expected)
            #expect(halves[extent] == [Bool](repeating: false, count: extent))
            // The quiet zone: four rows and columns of light modules on each side.
            let light = !inverted
            for index in 0..<extent {
                for margin in [0, 1, 2, 3, extent - 4, extent - 3, extent - 2, extent - 1] {
                    #expect(halves[margin][index] == light && halves[index][margin] == light)
                }
            }
        }
    }

    /// The path's rectangles cover exactly the dark modules, offset by the quiet zone; the
    /// document is the fixed markup with numbers only, whatever the text.
    @Test func svg_drawsExactlyTheDarkModules() throws {
        for text in ["a", Self.pairingURI, "<script>alert(\"x\")</script> & ]]>", String(repeating: "Parley ", count: 40)] {
            let symbol = try QRSymbol(encoding: text)
            let svg = symbol.svg(moduleSize: 5)
            let (extent, pixels, dark) = try Renderings.svgModules(svg)
            #expect(extent == symbol.sizeWithQuietZone)
            #expect(pixels == extent * 5)
            #expect(dark == Renderings.padded(symbol))
            #expect(!svg.contains("script") && !svg.contains("&") && !svg.contains("alert"))
        }
    }

    @Test func svg_moduleSizeIsClamped() throws {
        let symbol = try QRSymbol(encoding: Self.pairingURI)
        #expect(try Renderings.svgModules(symbol.svg(moduleSize: 0)).pixels == 37)
        #expect(try Renderings.svgModules(symbol.svg(moduleSize: 1_000_000)).pixels == 37 * QRSymbol.maxSVGModuleSize)
        #expect(try Renderings.svgModules(symbol.svg()).pixels == 37 * 4)
    }
}
