import CNcursesw

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The terminal, through ncursesw: the only type that calls curses.
///
/// Debian's ncursesw is not thread-safe, so one thread owns a `Terminal` from `open` to `end`
/// and makes every call (it is not `Sendable`). It paints `Frame`s and reads keys with a
/// timeout, so the same thread can look at the store and the node's news between keys.
/// `end` restores the terminal (`endwin`); call it on every way out, errors and signals too.
public final class Terminal {
    private let screen: OpaquePointer
    private let window: UnsafeMutablePointer<WINDOW>
    private var ended = false
    private var painted: Frame?

    /// What went wrong opening the terminal.
    public enum OpenError: Error, Equatable, CustomStringConvertible {
        case notATerminal
        case unknownTerminal(String)

        public var description: String {
            switch self {
            case .notATerminal: "parley chat needs a terminal on its standard input and output; run it in one, not in a pipe"
            case .unknownTerminal(let name):
                "the terminal type '\(name)' is unknown to ncurses; set TERM to one it knows (xterm-256color, screen, linux)"
            }
        }
    }

    /// Takes over the terminal: full screen, keys one by one, no echo. Fails (and changes
    /// nothing) when standard input or output is not a terminal or TERM is unknown.
    public init() throws(OpenError) {
        guard isatty(0) == 1, isatty(1) == 1 else { throw .notATerminal }
        parley_setlocale_from_environment()
        let name = getenv("TERM").map { String(cString: $0) } ?? ""
        guard let output = fdopen(1, "w"), let input = fdopen(0, "r") else { throw .notATerminal }
        guard let screen = newterm(nil, output, input) else { throw .unknownTerminal(name) }
        self.screen = screen
        _ = set_term(screen)
        window = parley_stdscr()!
        cbreak()
        noecho()
        nonl()
        keypad(window, true)
        set_escdelay(25)
        wtimeout(window, 50)
        if has_colors() {
            start_color()
            use_default_colors()
            init_pair(1, Int16(COLOR_WHITE), Int16(COLOR_BLUE))
            init_pair(2, Int16(COLOR_GREEN), -1)
            init_pair(3, Int16(COLOR_RED), -1)
            init_pair(4, Int16(COLOR_CYAN), -1)
            init_pair(5, Int16(COLOR_YELLOW), Int16(COLOR_BLUE))
        }
    }

    deinit {
        end()
        delscreen(screen)
    }

    /// The screen's size in columns and rows.
    public var size: (width: Int, height: Int) { (Int(parley_cols()), Int(parley_lines())) }

    /// The next key, or nil when none came within `milliseconds`.
    public func readKey(timeoutMilliseconds milliseconds: Int32) -> Key? {
        wtimeout(window, milliseconds)
        var value: UInt32 = 0
        let result = parley_get_wch(window, &value)
        if result == parley_key_err() { return nil }
        if result == parley_key_code_yes() { return Self.functionKey(Int32(bitPattern: value)) }
        return Key.fromCharacter(value)
    }

    private static func functionKey(_ code: Int32) -> Key {
        switch code {
        case parley_key_resize(): .resize
        case KEY_UP: .up
        case KEY_DOWN: .down
        case KEY_LEFT: .left
        case KEY_RIGHT: .right
        case KEY_HOME: .home
        case KEY_END: .end
        case KEY_PPAGE: .pageUp
        case KEY_NPAGE: .pageDown
        case KEY_BACKSPACE: .backspace
        case KEY_DC: .delete
        case KEY_ENTER: .enter
        default: .ignored
        }
    }

    /// Paints `frame` (only what changed reaches the terminal: curses compares).
    public func draw(_ frame: Frame) {
        if frame == painted { return }
        painted = frame
        let height = Int(parley_lines()), width = Int(parley_cols())
        for (index, row) in frame.rows.enumerated() where index < height {
            wmove(window, Int32(index), 0)
            var column = 0
            for span in row.spans {
                let attributes = Self.attributes(span.style)
                wattrset(window, attributes)
                var scalars = span.text.unicodeScalars.map { Self.printable($0.value) }
                // Never write into the last cell of the last row: curses would scroll.
                let room = (index == height - 1 ? width - 1 : width) - column
                guard room > 0 else { break }
                if DisplayWidth.of(span.text) > room {
                    scalars = DisplayWidth.prefix(span.text, fitting: room).text.unicodeScalars.map { Self.printable($0.value) }
                }
                _ = parley_addnwstr(window, scalars, Int32(scalars.count))
                column += DisplayWidth.of(String(String.UnicodeScalarView(scalars.compactMap(Unicode.Scalar.init))))
            }
            wattrset(window, parley_a_normal())
            wclrtoeol(window)
        }
        if let cursor = frame.cursor {
            curs_set(1)
            wmove(window, Int32(cursor.row), Int32(min(cursor.column, width - 1)))
        } else {
            curs_set(0)
        }
        wrefresh(window)
    }

    /// `value`, or U+FFFD for a control character: the layout cleans every text already, and
    /// this last check at the boundary makes sure no C0/C1 control ever reaches curses.
    private static func printable(_ value: UInt32) -> UInt32 {
        value < 0x20 || (0x7F...0x9F).contains(value) ? 0xFFFD : value
    }

    /// Rings the terminal's bell (its `bel`, or a flash where it has none): a mention or a
    /// private message arrived.
    public func bell() {
        _ = beep()
    }

    /// Forgets what was painted, so the next `draw` paints everything (after a resize).
    public func invalidate() {
        painted = nil
        clearok(window, true)
    }

    private static func attributes(_ style: Style) -> Int32 {
        let colors = has_colors()
        switch style {
        case .normal: return parley_a_normal()
        case .bold: return parley_a_bold()
        case .dim: return colors ? parley_color_pair(4) : parley_a_dim()
        case .bar: return colors ? parley_color_pair(1) : parley_a_reverse()
        case .barBold: return (colors ? parley_color_pair(1) : parley_a_reverse()) | parley_a_bold()
        case .highlight: return (colors ? parley_color_pair(2) : parley_a_normal()) | parley_a_bold()
        case .marker, .error: return (colors ? parley_color_pair(3) : parley_a_normal()) | parley_a_bold()
        case .barAlert: return (colors ? parley_color_pair(5) : parley_a_reverse()) | parley_a_bold()
        }
    }

    /// Gives the terminal back as it was (`endwin`). Safe to call more than once.
    public func end() {
        guard !ended else { return }
        ended = true
        curs_set(1)
        endwin()
    }
}
