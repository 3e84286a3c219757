import Testing

@testable import TerminalUI

@Suite struct ChatLayoutTests {
    func state(messages: [PaneMessage] = []) -> ChatState {
        var state = ChatState()
        state.me = "alice#aaaaaa"
        state.entries = [
            SidebarEntry(key: "L", label: "#lobby", kind: .room, unread: 0),
            SidebarEntry(key: "D", label: "#dev", kind: .room, unread: 3),
            SidebarEntry(key: "C", label: "bob", kind: .conversation, unread: 1),
        ]
        state.current = "L"
        state.messages = messages
        return state
    }

    func message(_ text: String, _ minute: Int, author: String = "bob#bbbbbb") -> PaneMessage {
        PaneMessage(shortID: "id\(minute)", author: author, isOwn: false, time: "12:\(minute)", millis: UInt64(minute), text: text)
    }

    @Test func everyRowFitsAt40x12AndLongMessagesWrap() {
        let long = String(repeating: "word ", count: 30)
        let frame = ChatLayout.frame(state(messages: [message("hi", 10), message(long, 11)]), width: 40, height: 12, clock: "12:12")
        #expect(frame.rows.count == 12)
        #expect(frame.rows.allSatisfy { $0.width <= 40 })
        #expect(frame.lines[0].contains("#lobby"))
        #expect(frame.lines[10].contains("Act: #dev 3, bob 1"))
        #expect(frame.lines[11].hasPrefix("> "))
        let bodyRows = frame.lines[1...9].filter { $0.contains("word") }
        #expect(bodyRows.count >= 3)
    }

    @Test func wideScreensShowTheSidebarWithUnreadCounts() {
        let frame = ChatLayout.frame(state(messages: [message("hi", 10)]), width: 80, height: 12, clock: "12:12")
        #expect(frame.rows.allSatisfy { $0.width <= 80 })
        #expect(frame.lines.contains { $0.contains("│") && $0.contains("#dev") && $0.contains("3") })
        #expect(frame.lines.contains { $0.contains("Conversations") })
    }

    @Test func theUnreadMarkerStandsBeforeTheFirstUnreadMessage() {
        var chat = state(messages: [message("old", 1), message("new one", 2), message("newer", 3)])
        chat.unreadFrom = 1
        let lines = ChatLayout.paneLines(chat, width: 40).map(\.text)
        let marker = lines.firstIndex { $0.contains(" new ") }
        #expect(marker == 1)
        #expect(lines[2].contains("new one"))
    }

    @Test func hostileTextIsCleanedInEveryField() {
        var chat = state(messages: [
            PaneMessage(
                shortID: "x", author: "ev\u{1B}[2Jil#cccccc", isOwn: false, time: "12:00", millis: 1,
                text: "\u{1B}]0;owned\u{07}hi", reactions: [.init(emoji: "\u{1B}[5m", count: 1)], attachments: ["a\u{9B}b"])
        ])
        chat.entries[0].label = "#lob\u{1B}by"
        chat.online = ["m\u{7}allory"]
        chat.typing = ["t\u{1B}c"]
        for width in [40, 80] {
            let frame = ChatLayout.frame(chat, width: width, height: 12, clock: "12:00")
            for line in frame.lines {
                #expect(!line.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
            }
        }
    }

    @Test func scrollingStopsAtTheTopAndSaysThereIsMoreBelow() {
        var chat = state(messages: (0..<30).map { message("line \($0)", $0) })
        chat.scroll = 1000
        let frame = ChatLayout.frame(chat, width: 40, height: 12, clock: "")
        #expect(frame.scroll == 30 - 9)
        #expect(frame.lines[1].contains("line 0"))
        #expect(frame.lines[10].contains("more below"))
    }

    @Test func tinyScreensDoNotCrash() {
        for (width, height) in [(0, 0), (5, 3), (12, 4), (13, 5)] {
            let frame = ChatLayout.frame(state(messages: [message("hello there", 1)]), width: width, height: height, clock: "")
            #expect(frame.rows.count == height)
            #expect(frame.rows.allSatisfy { $0.width <= max(0, width) })
        }
        let login = ChatLayout.loginFrame(LineEditor(), problem: "bad nick", width: 40, height: 12)
        #expect(login.lines.contains { $0.contains("Choose a nickname") })
    }
}

@Suite struct ChatStateTests {
    @Test func keysFromCharacterCodes() {
        #expect(Key.fromCharacter(0x0D) == .enter)
        #expect(Key.fromCharacter(0x7F) == .backspace)
        #expect(Key.fromCharacter(0x0E) == .control("n"))
        #expect(Key.fromCharacter(0x1B) == .ignored)
        #expect(Key.fromCharacter(0x9B) == .ignored)
        #expect(Key.fromCharacter(0x1F44B) == .character("👋"))
        #expect(Key.fromCharacter(0x11_0000) == .ignored)
    }

    @Test func neighbourWrapsAround() {
        var state = ChatState()
        state.entries = ["a", "b", "c"].map { SidebarEntry(key: $0, label: $0, kind: .room, unread: 0) }
        state.current = "c"
        #expect(state.neighbour(after: true) == "a")
        #expect(state.neighbour(after: false) == "b")
        state.entries = []
        #expect(state.neighbour(after: true) == nil)
    }

    @Test func messagesShowTheirMarksAndNoticesSortByTime() {
        var state = ChatState()
        state.entries = [SidebarEntry(key: "L", label: "#lobby", kind: .room, unread: 0)]
        state.current = "L"
        state.messages = [
            PaneMessage(
                shortID: "a", author: "bob#bbbbbb", isOwn: false, time: "12:00", millis: 10, text: "fixed", edited: true,
                reactions: [.init(emoji: "👍", count: 2)], attachments: ["map.png, 1.2 KiB"]),
            PaneMessage(shortID: "b", author: "bob#bbbbbb", isOwn: false, time: "12:01", millis: 30, text: "gone", deleted: true),
        ]
        state.notice("carol#cccccc is online", millis: 20, in: "")
        let lines = ChatLayout.paneLines(state, width: 80).map(\.text)
        #expect(lines.count == 3)
        #expect(lines[0] == "12:00 bob#bbbbbb: fixed (edited) [📎 map.png, 1.2 KiB] [👍 2]")
        #expect(lines[1] == "-!- carol#cccccc is online")
        #expect(lines[2] == "12:01 bob#bbbbbb: (message deleted)")
        state.showIDs = true
        #expect(ChatLayout.paneLines(state, width: 80)[0].text.hasPrefix("a 12:00 bob#bbbbbb: "))
    }
}
