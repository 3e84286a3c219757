/// One screenful, ready to paint: rows of styled spans whose text is already cleaned
/// (`ScreenText`) and fit to the width. The layout builds it purely; `Terminal` only paints it,
/// so what the screen shows is testable without a terminal.
public struct Frame: Equatable, Sendable {
    public var rows: [Row]
    /// Where the cursor stands (row, column), or nil to hide it.
    public var cursor: (row: Int, column: Int)?
    /// The scrollback offset the layout could honour (the pane cannot scroll past its top).
    public var scroll: Int
    /// How many lines the message pane holds in all (visible or not).
    public var paneLineCount: Int

    public init(rows: [Row], cursor: (row: Int, column: Int)?, scroll: Int = 0, paneLineCount: Int = 0) {
        self.rows = rows
        self.cursor = cursor
        self.scroll = scroll
        self.paneLineCount = paneLineCount
    }

    public static func == (a: Frame, b: Frame) -> Bool {
        a.rows == b.rows && a.cursor?.row == b.cursor?.row && a.cursor?.column == b.cursor?.column && a.scroll == b.scroll
            && a.paneLineCount == b.paneLineCount
    }

    /// The rows as plain text (for tests and debugging).
    public var lines: [String] { rows.map(\.text) }
}

/// How a span looks.
public enum Style: Equatable, Sendable {
    case normal, bold, dim, bar, barBold, highlight, marker, error
    /// A chat in the status bar with a mention or a private message waiting.
    case barAlert
}

/// A piece of a row in one style.
public struct Span: Equatable, Sendable {
    public var text: String
    public var style: Style

    public init(_ text: String, _ style: Style = .normal) {
        self.text = text
        self.style = style
    }
}

/// One screen row: spans laid left to right.
public struct Row: Equatable, Sendable {
    public var spans: [Span]

    public init(_ spans: [Span] = []) { self.spans = spans }

    public var text: String { spans.map(\.text).joined() }
    public var width: Int { DisplayWidth.of(text) }

    /// Appends `text` cut to what is left of `width` columns.
    public mutating func append(_ text: String, _ style: Style = .normal, within width: Int) {
        let left = width - self.width
        guard left > 0 else { return }
        let cut = DisplayWidth.prefix(text, fitting: left).text
        if !cut.isEmpty { spans.append(Span(cut, style)) }
    }

    /// Pads the row with `style` spaces to `width` columns.
    public mutating func pad(to width: Int, _ style: Style = .normal) {
        let left = width - self.width
        if left > 0 { spans.append(Span(String(repeating: " ", count: left), style)) }
    }
}
