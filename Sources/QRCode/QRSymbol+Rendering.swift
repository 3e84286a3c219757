// MARK: - Terminal

extension QRSymbol {
    /// The symbol as lines of text for a terminal, quiet zone included: each character cell
    /// shows two modules, one above the other, with `█`, `▀`, `▄` and space, so the code comes
    /// out about square in a cell twice as tall as wide. Every line has `sizeWithQuietZone`
    /// cells; there are (`sizeWithQuietZone` + 1) / 2 lines (the lower half of the last one is
    /// past the quiet zone and left blank).
    ///
    /// A block character is drawn in the terminal's text colour, a space shows its background.
    /// A phone reads a code whose dark modules are darker than its light ones, and many readers
    /// never try the inverse. Most terminals are light text on a dark background, so by default
    /// the glyphs draw the *light* modules and the quiet zone, and the dark modules are the
    /// terminal's dark background: dark on light, framed by four light modules. On a terminal
    /// with dark text on a light background pass `inverted: true`: the glyphs then draw the dark
    /// modules and the background is the light one. The lines hold no escape sequences, so they
    /// can go through curses or a pipe as they are.
    public func terminalLines(inverted: Bool = false) -> [String] {
        let quiet = Self.quietZone
        let extent = sizeWithQuietZone
        // Whether the cell half at (row, column) of the padded grid gets ink; past the grid,
        // never (the terminal's own background).
        func inked(_ row: Int, _ column: Int) -> Bool {
            guard row < extent else { return false }
            return isDark(row: row - quiet, column: column - quiet) == inverted
        }
        return stride(from: 0, to: extent, by: 2).map { row in
            String(
                (0..<extent).map { column -> Character in
                    switch (inked(row, column), inked(row + 1, column)) {
                    case (true, true): return "█"
                    case (true, false): return "▀"
                    case (false, true): return "▄"
                    case (false, false): return " "
                    }
                })
        }
    }
}

// MARK: - SVG

extension QRSymbol {
    /// The most pixels per module `svg(moduleSize:)` draws; larger sizes are clamped to it.
    public static let maxSVGModuleSize = 64

    /// The symbol as a standalone SVG document: a white square the size of the symbol with its
    /// quiet zone, and one black `<path>` covering the dark modules (each horizontal run of dark
    /// modules in a row as one rectangle of unit squares, in a `viewBox` of modules), drawn with
    /// `shape-rendering="crispEdges"` so no anti-aliased seams appear between modules.
    ///
    /// `moduleSize` sets the width and height in CSS pixels (`sizeWithQuietZone × moduleSize`),
    /// clamped to 1...`maxSVGModuleSize`; the drawing scales with CSS if the page resizes it. The
    /// document holds only numbers and fixed markup, never the encoded text, so it can be
    /// inlined in an HTML page as it is, and has no XML declaration for the same reason.
    public func svg(moduleSize: Int = 4) -> String {
        let extent = sizeWithQuietZone
        let pixels = extent * min(max(moduleSize, 1), Self.maxSVGModuleSize)
        var path = ""
        for row in 0..<size {
            var column = 0
            while column < size {
                guard isDark(row: row, column: column) else {
                    column += 1
                    continue
                }
                var run = 1
                while isDark(row: row, column: column + run) { run += 1 }
                path += "M\(column + Self.quietZone) \(row + Self.quietZone)h\(run)v1h-\(run)z"
                column += run
            }
        }
        return "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(extent) \(extent)\" width=\"\(pixels)\" height=\"\(pixels)\""
            + " shape-rendering=\"crispEdges\"><rect width=\"\(extent)\" height=\"\(extent)\" fill=\"#fff\"/>"
            + "<path fill=\"#000\" d=\"\(path)\"/></svg>"
    }
}
