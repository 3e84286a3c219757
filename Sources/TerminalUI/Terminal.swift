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
    private let output: UnsafeMutablePointer<FILE>
    private var ended = false
    private var painted: Frame?

    /// Which emoji sequences this terminal draws as one glyph: lay frames out under it
    /// (`DisplayWidth.$emojiJoining`), so curses' cells and the terminal's columns agree.
    public let emojiJoining: DisplayWidth.EmojiJoining

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
        // Curses writes to the C library's stdout: `putp` and `vidattr` (`draw`'s joined emoji)
        // write there whatever stream `newterm` gets, and one stream keeps them in order.
        guard let output = parley_stdout(), let input = fdopen(0, "r") else { throw .notATerminal }
        emojiJoining = Self.askEmojiJoining()
        guard let screen = newterm(nil, output, input) else { throw .unknownTerminal(name) }
        self.screen = screen
        self.output = output
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
    ///
    /// An emoji sequence the terminal joins into one glyph is more than a curses cell holds
    /// (it keeps the first emoji of a family and drops the rest): curses paints two blank cells
    /// there, and the whole sequence is written over them once curses is done.
    public func draw(_ frame: Frame) {
        if frame == painted { return }
        painted = frame
        let height = Int(parley_lines()), width = Int(parley_cols())
        var joined: [(row: Int32, column: Int32, text: String, attributes: Int32)] = []
        for (index, row) in frame.rows.enumerated() where index < height {
            wmove(window, Int32(index), 0)
            var column = 0
            for span in row.spans {
                let attributes = Self.attributes(span.style)
                wattrset(window, attributes)
                // Never write into the last cell of the last row: curses would scroll.
                let room = (index == height - 1 ? width - 1 : width) - column
                guard room > 0 else { break }
                let text = DisplayWidth.of(span.text) > room ? DisplayWidth.prefix(span.text, fitting: room).text : span.text
                var scalars: [UInt32] = []
                for character in text {
                    if character.unicodeScalars.count > 1, DisplayWidth.isJoinedSequence(character) {
                        joined.append((Int32(index), Int32(column), String(character), attributes))
                        scalars += [0x20, 0x20]
                        column += 2
                    } else {
                        let printable = character.unicodeScalars.map { Self.printable($0.value) }
                        scalars += printable
                        column += printable.reduce(0) { $0 + DisplayWidth.of(Unicode.Scalar($1) ?? "\u{FFFD}") }
                    }
                }
                _ = parley_addnwstr(window, scalars, Int32(scalars.count))
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
        guard !joined.isEmpty else { return }
        let (cursorRow, cursorColumn) = (parley_cursor_row(window), parley_cursor_column(window))
        for glyph in joined {
            parley_write_over(glyph.row, glyph.column, glyph.text, glyph.attributes, cursorRow, cursorColumn)
        }
        fflush(output)
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

    /// Asks the terminal, before curses takes it, how far a family (a ZWJ sequence) and a hand
    /// with a skin tone move its cursor: 2 columns means one glyph. The terminal answers a
    /// cursor-position request (DSR, `ESC [ 6 n`) with `ESC [ row ; column R`; one that does not
    /// answer within a second is taken to join nothing, as curses counts.
    private static func askEmojiJoining() -> DisplayWidth.EmojiJoining {
        var saved = termios()
        guard tcgetattr(0, &saved) == 0 else { return .none }
        var raw = saved
        cfmakeraw(&raw)
        guard tcsetattr(0, TCSANOW, &raw) == 0 else { return .none }
        defer {
            writeToTerminal("\r\u{1B}[K")
            _ = tcsetattr(0, TCSANOW, &saved)
        }
        guard let family = columnsMoved(by: "👨\u{200D}👩\u{200D}👧") else { return .none }
        let hand = columnsMoved(by: "👍🏽")
        return DisplayWidth.EmojiJoining(zeroWidthJoiner: family == 2, skinTone: hand == 2)
    }

    /// How many columns writing `sample` at the start of the line moves the cursor; nil when
    /// the terminal gave no answer.
    private static func columnsMoved(by sample: String) -> Int? {
        writeToTerminal("\r" + sample + "\u{1B}[6n")
        let deadline = ContinuousClock.now + .seconds(1)
        var reply: [UInt8] = []
        while ContinuousClock.now < deadline, reply.count < 64 {
            var descriptor = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
            let left = deadline - ContinuousClock.now
            let milliseconds = Int32(max(1, left.components.seconds * 1_000 + left.components.attoseconds / 1_000_000_000_000_000))
            guard poll(&descriptor, 1, milliseconds) > 0 else { continue }
            var byte: UInt8 = 0
            guard read(0, &byte, 1) == 1 else { return nil }
            reply.append(byte)
            guard byte == UInt8(ascii: "R") else { continue }
            // The answer is the end of what was read: keys typed before it are dropped.
            guard let start = reply.lastIndex(of: 0x1B) else { return nil }
            let fields = String(decoding: reply[start...].dropFirst(2).dropLast(), as: UTF8.self).split(separator: ";")
            guard fields.count == 2, let column = Int(fields[1]) else { return nil }
            return column - 1
        }
        return nil
    }

    private static func writeToTerminal(_ text: String) {
        let bytes = Array(text.utf8)
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(1, buffer.baseAddress! + offset, buffer.count - offset)
                if written <= 0 { return }
                offset += written
            }
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
