import QRCode
import Testing

/// The renderings read back into grids of modules, as a screen or a browser would show them.
enum Renderings {
    /// Terminal lines as the grid of cell halves that carry ink (`true`), two rows per line:
    /// `█` both, `▀` the upper, `▄` the lower, space neither. Any other character is an error.
    static func inkedHalves(_ lines: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> [[Bool]] {
        var grid: [[Bool]] = []
        for line in lines {
            var upper: [Bool] = []
            var lower: [Bool] = []
            for character in line {
                switch character {
                case "█": (upper, lower) = (upper + [true], lower + [true])
                case "▀": (upper, lower) = (upper + [true], lower + [false])
                case "▄": (upper, lower) = (upper + [false], lower + [true])
                case " ": (upper, lower) = (upper + [false], lower + [false])
                default:
                    Issue.record(
                        "unexpected character \(character.unicodeScalars.map { "U+" + String($0.value, radix: 16) }) in \(line)", sourceLocation: sourceLocation
                    )
                    throw RenderingError.unexpected
                }
            }
            grid += [upper, lower]
        }
        return grid
    }

    /// The terminal lines as a camera sees them on a terminal: ink in the text colour, the rest
    /// in the background colour (`true` dark), surrounded by `margin` cells of background.
    static func screen(_ lines: [String], darkBackground: Bool, margin: Int = 6) throws -> GreyImage {
        // A dark background draws ink light (false); a light one draws it dark (true).
        let grid = try inkedHalves(lines).map { row in row.map { inked in inked != darkBackground } }
        return GreyImage(grid: grid, margin: margin, surroundings: darkBackground ? 0 : 255)
    }

    /// The grid of dark modules an SVG from `QRSymbol.svg` draws over its white square, after
    /// checking that the document is exactly the expected markup and returning its `viewBox`
    /// extent and pixel size.
    static func svgModules(_ svg: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> (extent: Int, pixels: Int, dark: [[Bool]]) {
        let shape =
            /<svg xmlns="http:\/\/www.w3.org\/2000\/svg" viewBox="0 0 (\d+) (\d+)" width="(\d+)" height="(\d+)" shape-rendering="crispEdges"><rect width="(\d+)" height="(\d+)" fill="#fff"\/><path fill="#000" d="([0-9Mhvz -]*)"\/><\/svg>/
        let match = try #require(try shape.wholeMatch(in: svg), "unexpected SVG markup: \(svg.prefix(300))", sourceLocation: sourceLocation)
        let extent = try #require(Int(match.1), sourceLocation: sourceLocation)
        #expect([match.2, match.5, match.6].allSatisfy { Int($0) == extent }, "viewBox and background must be square", sourceLocation: sourceLocation)
        #expect(match.3 == match.4, sourceLocation: sourceLocation)
        var dark = [[Bool]](repeating: [Bool](repeating: false, count: extent), count: extent)
        // Each subpath is a rectangle one module tall: M x y h n v1 h-n z.
        let rectangle = /M(\d+) (\d+)h(\d+)v1h-(\d+)z/
        var covered = 0
        for subpath in String(match.7).matches(of: rectangle) {
            let (x, y, width, back) = (Int(subpath.1) ?? -1, Int(subpath.2) ?? -1, Int(subpath.3) ?? 0, Int(subpath.4) ?? -1)
            covered += subpath.0.count
            try #require(
                width == back && width > 0 && (0..<extent).contains(y) && x >= 0 && x + width <= extent, "bad rectangle \(subpath.0)",
                sourceLocation: sourceLocation)
            for column in x..<(x + width) {
                #expect(!dark[y][column], "module \(y),\(column) drawn twice", sourceLocation: sourceLocation)
                dark[y][column] = true
            }
        }
        #expect(covered == match.7.count, "the path holds something other than rectangles", sourceLocation: sourceLocation)
        return (extent, Int(match.3) ?? 0, dark)
    }

    /// The symbol's modules with the quiet zone around them (`true` dark).
    static func padded(_ symbol: QRSymbol) -> [[Bool]] {
        let quiet = QRSymbol.quietZone
        return (0..<symbol.sizeWithQuietZone).map { row in
            (0..<symbol.sizeWithQuietZone).map { column in symbol.isDark(row: row - quiet, column: column - quiet) }
        }
    }

    enum RenderingError: Error { case unexpected }
}
