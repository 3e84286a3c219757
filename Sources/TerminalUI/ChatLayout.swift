/// Lays a `ChatState` out on a screen of a given size (irssi's shape):
///
/// ```
/// #lobby — 2 online: alice#k3v9q2, bob#7hq2mx          header
/// 12:03 alice#k3v9q2: hello                │ Rooms      messages │ sidebar
/// ──────────── new ────────────            │ #lobby     (sidebar from 64 columns)
/// 12:04 bob#7hq2mx: hi there, a long line  │ #dev     2
///                   wraps under its text   │ Conversations
/// [12:05] [alice#k3v9q2] [#lobby] Act: #dev 2   bob is typing…   status bar
/// > the input line                                                input
/// ```
///
/// Narrower screens drop the sidebar; the status bar's `Act:` list still shows unread counts.
/// Every text from the state is cleaned here (`ScreenText`), so no caller can forget it.
public enum ChatLayout {
    /// Screens at least this wide show the sidebar.
    public static let sidebarMinimumWidth = 64

    public static func frame(_ state: ChatState, width: Int, height: Int, clock: String) -> Frame {
        guard width >= 12, height >= 4 else {
            return Frame(rows: (0..<max(0, height)).map { $0 == 0 ? Row([Span(DisplayWidth.fit("too small", max(0, width)))]) : Row() }, cursor: nil)
        }
        let sidebarWidth = sidebarWidth(forScreenWidth: width)
        let paneWidth = paneWidth(forScreenWidth: width)
        let paneHeight = height - 3
        var rows: [Row] = [header(state, width: width)]

        let lines = paneLines(state, width: paneWidth)
        let maxScroll = max(0, lines.count - paneHeight)
        let scroll = min(max(0, state.scroll), maxScroll)
        let end = lines.count - scroll
        var visible = Array(lines[max(0, end - paneHeight)..<end])
        if visible.count < paneHeight {
            visible = Array(repeating: Row(), count: paneHeight - visible.count) + visible
        }
        let side = sidebarWidth > 0 ? sidebar(state, width: sidebarWidth, height: paneHeight) : []
        for index in 0..<paneHeight {
            var row = visible[index]
            if sidebarWidth > 0 {
                row.pad(to: paneWidth)
                row.spans.append(Span("│", .dim))
                row.spans += side[index].spans
            }
            rows.append(row)
        }
        rows.append(statusBar(state, width: width, clock: clock, scrolled: scroll > 0))
        let prompt = state.input.isSecret ? ScreenText.line(state.secretPrompt ?? "passphrase: ") : "> "
        let shown = state.input.visible(width: width - DisplayWidth.of(prompt))
        var input = Row([Span(prompt, .bold)])
        input.append(shown.text, within: width)
        rows.append(input)
        return Frame(
            rows: rows, cursor: (height - 1, DisplayWidth.of(prompt) + shown.cursorColumn), scroll: scroll, paneLineCount: lines.count)
    }

    /// The sidebar's columns on a screen `width` wide (0: none).
    static func sidebarWidth(forScreenWidth width: Int) -> Int {
        width >= sidebarMinimumWidth ? min(26, width / 4) : 0
    }

    /// The message pane's columns on a screen `width` wide.
    public static func paneWidth(forScreenWidth width: Int) -> Int {
        let sidebar = sidebarWidth(forScreenWidth: width)
        return sidebar > 0 ? width - sidebar - 1 : width
    }

    /// The header: what is open and who is online there.
    static func header(_ state: ChatState, width: Int) -> Row {
        var row = Row()
        let title = state.currentEntry.map { ScreenText.line($0.label) } ?? "(no room open: /join lobby)"
        row.append(" " + title, .barBold, within: width)
        if let topic = state.currentEntry?.topic, !topic.isEmpty {
            row.append(" — " + ScreenText.line(topic), .bar, within: width)
        }
        if !state.online.isEmpty {
            let names = state.online.map(ScreenText.line).joined(separator: ", ")
            row.append(" — \(state.online.count) online: \(names)", .bar, within: width)
        }
        row.pad(to: width, .bar)
        return row
    }

    /// Every line of the pane for `width` columns: messages and notices by time, the unread
    /// marker before the first unread message, long texts wrapped under themselves, and above
    /// them all, when the chat's first message is on hand, a line that says so.
    public static func paneLines(_ state: ChatState, width: Int) -> [Row] {
        let notices = (state.notices[state.current ?? ""] ?? []) + (state.current == nil ? [] : state.notices[""] ?? [])
        var items: [(millis: UInt64, order: Int, rows: [Row])] = []
        if state.historyBegins, let entry = state.currentEntry {
            items.append((0, -1, [ruler(" beginning of \(ScreenText.line(entry.label)) ", width: width, style: .dim)]))
        }
        for (index, message) in state.messages.enumerated() {
            var rows: [Row] = []
            if index == state.unreadFrom { rows.append(marker(width: width)) }
            rows += messageRows(message, width: width, showID: state.showIDs)
            items.append((message.millis, index, rows))
        }
        for (index, notice) in notices.enumerated() {
            items.append((notice.millis, state.messages.count + index, noticeRows(notice, width: width)))
        }
        items.sort { ($0.millis, $0.order) < ($1.millis, $1.order) }
        return items.flatMap(\.rows)
    }

    static func marker(width: Int) -> Row { ruler(" new ", width: width, style: .marker) }

    /// `label` centred in a line of `─` across `width` columns.
    static func ruler(_ label: String, width: Int, style: Style) -> Row {
        let fitted = DisplayWidth.prefix(label, fitting: width)
        let side = max(0, (width - fitted.width) / 2)
        let text = String(repeating: "─", count: side) + fitted.text + String(repeating: "─", count: max(0, width - side - fitted.width))
        return Row([Span(text, style)])
    }

    static func messageRows(_ message: PaneMessage, width: Int, showID: Bool) -> [Row] {
        var head: [Span] = []
        if showID { head.append(Span(message.shortID + " ", .dim)) }
        head.append(Span(message.time + " ", .dim))
        head.append(Span(ScreenText.line(message.author), message.isOwn ? .highlight : message.mentionsMe ? .marker : .bold))
        head.append(Span(": "))
        let headWidth = head.reduce(0) { $0 + DisplayWidth.of($1.text) }
        var body: String
        if message.deleted {
            body = "(message deleted)"
        } else {
            body = ScreenText.clean(message.text)
            if message.edited { body += " (edited)" }
            for attachment in message.attachments { body += (body.isEmpty ? "" : " ") + "[📎 " + ScreenText.line(attachment) + "]" }
        }
        if !message.reactions.isEmpty {
            body += " [" + message.reactions.map { "\(ScreenText.line($0.emoji)) \($0.count)" }.joined(separator: ", ") + "]"
        }
        let style: Style = message.deleted ? .dim : message.mentionsMe ? .bold : .normal
        // A right-to-left message ends at the pane's right edge, as `dir=auto` aligns it on the page.
        let rightToLeft = !message.deleted && TextDirection.of(body) == .rightToLeft
        func text(_ line: String, in columns: Int) -> [Span] {
            let room = columns - DisplayWidth.of(line)
            return rightToLeft && room > 0 ? [Span(String(repeating: " ", count: room)), Span(line, style)] : [Span(line, style)]
        }
        if headWidth > width - 4 {
            // Too narrow to put text beside the head: the head on its own line.
            var first = Row()
            for span in head { first.append(span.text, span.style, within: width) }
            return [first] + Wrapping.lines(body, width: width).map { Row(text($0, in: width)) }
        }
        let indent = headWidth <= width / 2 ? headWidth : 2
        let lines = Wrapping.lines(body, width: width - headWidth, indent: indent - headWidth)
        var rows: [Row] = []
        for (index, line) in lines.enumerated() {
            if index == 0 {
                rows.append(Row(head + text(line, in: width - headWidth)))
            } else {
                rows.append(Row([Span(String(repeating: " ", count: indent))] + text(line, in: width - indent)))
            }
        }
        return rows
    }

    static func noticeRows(_ notice: Notice, width: Int) -> [Row] {
        let lead = "-!- "
        let style: Style = notice.kind == .error ? .error : .dim
        return Wrapping.lines(ScreenText.clean(notice.text), width: width - lead.count).enumerated().map { index, line in
            Row([Span(index == 0 ? lead : "    ", .bold), Span(line, style)])
        }
    }

    static func sidebar(_ state: ChatState, width: Int, height: Int) -> [Row] {
        var rows: [Row] = []
        func entryRow(_ entry: SidebarEntry) -> Row {
            let count = entry.unread > 0 ? " \(entry.unread)\(entry.alert && !entry.muted ? "!" : "")" : ""
            let label = DisplayWidth.fit(" " + ScreenText.line(entry.label) + (entry.muted ? " (muted)" : ""), width - count.count)
            let current = entry.key == state.current
            let countStyle: Style = entry.muted ? .dim : entry.alert ? .marker : .highlight
            return Row([Span(label, current ? .barBold : entry.muted ? .dim : .normal), Span(count, current ? .barBold : countStyle)])
        }
        let rooms = state.entries.filter { $0.kind == .room }
        let conversations = state.entries.filter { $0.kind == .conversation }
        rows.append(Row([Span(DisplayWidth.fit("Rooms", width), .bold)]))
        rows += rooms.map(entryRow)
        rows.append(Row([Span(DisplayWidth.fit("Conversations", width), .bold)]))
        rows += conversations.isEmpty ? [Row([Span(DisplayWidth.fit(" (/msg NICK)", width), .dim)])] : conversations.map(entryRow)
        rows.append(Row([Span(DisplayWidth.fit("Online", width), .bold)]))
        rows +=
            state.online.isEmpty
            ? [Row([Span(DisplayWidth.fit(" nobody else", width), .dim)])]
            : state.online.map { Row([Span(DisplayWidth.fit(" " + ScreenText.line($0), width))]) }
        if rows.count > height { rows = Array(rows.prefix(height)) }
        while rows.count < height { rows.append(Row([Span(String(repeating: " ", count: width))])) }
        return rows
    }

    static func statusBar(_ state: ChatState, width: Int, clock: String, scrolled: Bool) -> Row {
        var row = Row()
        // Narrow screens keep what changes (activity, typing, scrollback); the header already
        // names the open room.
        let roomy = width >= sidebarMinimumWidth
        if roomy {
            row.append("[\(ScreenText.line(clock))] [\(ScreenText.line(state.me))] ", .bar, within: width)
            if let entry = state.currentEntry { row.append("[\(ScreenText.line(entry.label))] ", .barBold, within: width) }
        }
        if scrolled { row.append("-- more below (PgDn, Ctrl-G) -- ", .barBold, within: width) }
        // Mentions and private messages first, marked `!` in their own colour; muted chats last.
        let active = state.entries.filter { $0.unread > 0 && $0.key != state.current }.enumerated().sorted { a, b in
            func rank(_ entry: SidebarEntry) -> Int { entry.muted ? 2 : entry.alert ? 0 : 1 }
            return (rank(a.element), a.offset) < (rank(b.element), b.offset)
        }.map(\.element)
        if !active.isEmpty {
            row.append("Act: ", .barBold, within: width)
            for (index, entry) in active.enumerated() {
                let alert = entry.alert && !entry.muted
                let text = "\(ScreenText.line(entry.label)) \(entry.unread)\(alert ? "!" : "")"
                row.append(text, alert ? .barAlert : entry.muted ? .bar : .barBold, within: width)
                row.append(index == active.count - 1 ? " " : ", ", .barBold, within: width)
            }
        }
        if !state.typing.isEmpty {
            let who = state.typing.map(ScreenText.line).joined(separator: ", ")
            row.append("\(who) \(state.typing.count == 1 ? "is" : "are") typing… ", .bar, within: width)
        }
        if roomy && !state.nodeSummary.isEmpty { row.append("[\(ScreenText.line(state.nodeSummary))]", .bar, within: width) }
        row.pad(to: width, .bar)
        return row
    }

    /// TinyChat's login screen: a nickname prompt, and what was wrong with the last one.
    public static func loginFrame(_ input: LineEditor, problem: String?, width: Int, height: Int) -> Frame {
        guard width >= 12, height >= 4 else { return frame(ChatState(), width: width, height: height, clock: "") }
        var rows = Array(repeating: Row(), count: height)
        let top = max(0, height / 2 - 3)
        func centred(_ text: String, _ style: Style) -> Row {
            let columns = DisplayWidth.of(text)
            var row = Row([Span(String(repeating: " ", count: max(0, (width - columns) / 2)))])
            row.append(text, style, within: width)
            return row
        }
        rows[top] = centred("Welcome to Parley", .bold)
        rows[min(height - 1, top + 1)] = centred("chat with the people on your network", .dim)
        let prompt = "Choose a nickname: "
        let fieldWidth = min(32, max(4, width - DisplayWidth.of(prompt) - 2))
        let shown = input.visible(width: fieldWidth)
        let left = max(0, (width - DisplayWidth.of(prompt) - fieldWidth) / 2)
        let promptRow = min(height - 1, top + 3)
        var row = Row([Span(String(repeating: " ", count: left)), Span(prompt, .bold)])
        row.append(shown.text, within: width)
        rows[promptRow] = row
        if let problem, top + 5 < height { rows[top + 5] = centred(ScreenText.line(problem), .error) }
        let cursorColumn = min(width - 1, left + DisplayWidth.of(prompt) + shown.cursorColumn)
        return Frame(rows: rows, cursor: (promptRow, cursorColumn))
    }
}
