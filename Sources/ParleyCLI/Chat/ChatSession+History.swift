import Replica
import Store
import TerminalUI

/// The open chat's history as a window: the pane holds at most `windowLimit` messages, read
/// from the store a page at a time as the reader pages past either end, so memory and redraw
/// stay the same however long the chat is (docs/USAGE.md, *Reading history*).
///
/// `state.scroll` counts lines up from the bottom of the pane, so messages added or dropped at
/// the top leave the view where it is; whatever is added or dropped below the view moves
/// `scroll` by its lines.
extension ChatSession {
    /// The most messages on hand at once.
    static let windowLimit = 400
    /// Messages read per page: on opening a chat (twice that), and past either end.
    static let pageSize = 100

    /// Re-reads the window in place (edits, reactions, deletions and arrivals). Following the
    /// newest, it takes what arrived and drops the oldest beyond `windowLimit`; scrolled back, its
    /// first message stays first and arrivals join only while there is room, so nothing moves.
    func refreshWindow(_ store: ReplicaStore, _ target: ChatTarget) throws {
        guard let first = window.first else { return try readNewest(store, target) }
        let fresh: [MessageView]
        do {
            fresh = try store.views.history(target.id, limit: Self.windowLimit + Self.pageSize, from: .from(first.id))
        } catch StoreError.notFound {
            return try readNewest(store, target)  // its first message is gone (erased): start again
        }
        let following = state.scroll == 0
        if windowAtNewest && following {
            guard fresh.count < Self.windowLimit + Self.pageSize else { return try readNewest(store, target) }
            window = Array(fresh.suffix(Self.windowLimit))
            if window.count < fresh.count { historyBegins = false }
        } else {
            let kept = windowAtNewest ? Self.windowLimit : max(window.count, 1)
            window = Array(fresh.prefix(kept))
            windowAtNewest = fresh.count <= kept
        }
        showWindow()
    }

    /// The newest two pages.
    func readNewest(_ store: ReplicaStore, _ target: ChatTarget) throws {
        window = try store.views.history(target.id, limit: 2 * Self.pageSize)
        windowAtNewest = true
        historyBegins = window.count < 2 * Self.pageSize
        showWindow()
    }

    /// Puts the window on the screen's state.
    func showWindow() {
        state.messages = window.map(paneMessage)
        state.historyBegins = historyBegins
        state.unreadFrom = unreadFromID.flatMap { id in window.firstIndex { $0.id == id } }
    }

    /// Page Up: a screen up, and the page before the window first when that passes its top.
    func pageUp() {
        let step = max(1, terminal.size.height - 4)
        let paneHeight = max(1, terminal.size.height - 3)
        if !historyBegins, state.scroll + step > paneLineCount() - paneHeight { readOlderPage() }
        state.scroll += step
    }

    /// Page Down: a screen down, and the page after the window first when that passes its
    /// bottom; at the newest, the chat is read.
    func pageDown() {
        let step = max(1, terminal.size.height - 4)
        if !windowAtNewest, state.scroll - step < 0 { readNewerPage() }
        state.scroll = max(0, state.scroll - step)
        if state.scroll == 0 && windowAtNewest { reload() }
    }

    /// Ctrl-G: from the bottom, to where the unread began (the `new` line at the top of the
    /// pane); from anywhere else, or with nothing unread, back to the newest.
    func jumpToUnreadOrNewest() {
        guard let target = state.current.flatMap({ targets[$0] }), let store = try? context.store() else { return }
        do {
            if state.scroll == 0, windowAtNewest, let id = unreadFromID {
                let before = try store.views.history(target.id, limit: 10, before: id)
                let from = try store.views.history(target.id, limit: Self.windowLimit - 10, from: .from(id))
                window = before + from
                historyBegins = before.count < 10
                windowAtNewest = from.count < Self.windowLimit - 10
                showWindow()
                let lines = ChatLayout.paneLines(state, width: paneWidth())
                let marker = lines.lastIndex { $0.spans.first?.style == .marker } ?? 0
                state.scroll = max(0, lines.count - max(0, marker - 1) - max(1, terminal.size.height - 3))
                notePaneDrawn(lines: lines.count)
            } else {
                state.scroll = 0
                if !windowAtNewest { try readNewest(store, target) }
                reload()
            }
        } catch {
            state.notice(describe(error, command: nil), kind: .error, millis: now)
        }
    }

    private func readOlderPage() {
        guard let target = state.current.flatMap({ targets[$0] }), let first = window.first, let store = try? context.store(),
            let older = try? store.views.history(target.id, limit: Self.pageSize, before: first.id)
        else { return }
        historyBegins = older.count < Self.pageSize
        window = older + window
        showWindow()
        let linesBefore = paneLineCount()
        if window.count > Self.windowLimit {
            // Dropped below the view: the view keeps its place by as many lines fewer below it.
            window.removeLast(window.count - Self.windowLimit)
            windowAtNewest = false
            showWindow()
            state.scroll = max(0, state.scroll - (linesBefore - paneLineCount()))
        }
        notePaneDrawn(lines: paneLineCount())
    }

    private func readNewerPage() {
        guard let target = state.current.flatMap({ targets[$0] }), let last = window.last, let store = try? context.store(),
            let newer = try? store.views.history(target.id, limit: Self.pageSize, after: last.id)
        else { return }
        let linesBefore = paneLineCount()
        window += newer
        windowAtNewest = newer.count < Self.pageSize
        if window.count > Self.windowLimit {
            window.removeFirst(window.count - Self.windowLimit)
            historyBegins = false
        }
        showWindow()
        // Added below the view: it keeps its place by as many lines more below it.
        let lines = paneLineCount()
        state.scroll += max(0, lines - linesBefore)
        notePaneDrawn(lines: lines)
    }

    /// The pane's width for the terminal's size now (`ChatLayout.frame`'s rule).
    func paneWidth() -> Int {
        ChatLayout.paneWidth(forScreenWidth: terminal.size.width)
    }

    /// How many lines the pane holds for the state now.
    func paneLineCount() -> Int {
        ChatLayout.paneLines(state, width: paneWidth()).count
    }

    /// Tells `draw` the pane's lines changed by the session's own doing (a page read), so it does
    /// not take the change for arrivals below the view.
    func notePaneDrawn(lines: Int) {
        lastPane = (state.current, terminal.size.width, lines)
    }
}
