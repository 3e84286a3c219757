import Testing

@testable import TerminalUI

/// What the chat screen shows for the reader's attention (issue 35): where a chat's history
/// begins, mentions, the `Act:` list's alerts and muted chats, and the widths of flags.
@Suite struct AttentionLayoutTests {
    func state() -> ChatState {
        var state = ChatState()
        state.me = "alice#aaaaaa"
        state.entries = [
            SidebarEntry(key: "L", label: "#lobby", kind: .room, unread: 0),
            SidebarEntry(key: "D", label: "#dev", kind: .room, unread: 3),
            SidebarEntry(key: "O", label: "#ops", kind: .room, unread: 2, alert: true),
            SidebarEntry(key: "Q", label: "#quiet", kind: .room, unread: 7, alert: true, muted: true),
        ]
        state.current = "L"
        state.messages = [
            PaneMessage(shortID: "a", author: "bob#bbbbbb", isOwn: false, time: "12:01", millis: 1, text: "first"),
            PaneMessage(shortID: "b", author: "bob#bbbbbb", isOwn: false, time: "12:02", millis: 2, text: "hi @alice", mentionsMe: true),
        ]
        return state
    }

    @Test func theBeginningOfAChat_isALineAboveItsFirstMessage_onlyWhenThatMessageIsOnHand() {
        var shown = state()
        shown.historyBegins = true
        let lines = ChatLayout.paneLines(shown, width: 50).map(\.text)
        #expect(lines.first?.contains("beginning of #lobby") == true)
        #expect(lines.first?.hasPrefix("───") == true)
        #expect(lines[1].contains("first"))
        shown.historyBegins = false
        #expect(!ChatLayout.paneLines(shown, width: 50).map(\.text).joined().contains("beginning"))
    }

    @Test func aMention_isInTheMarkerColour_andItsTextBold() {
        let rows = ChatLayout.paneLines(state(), width: 50)
        let mention = rows[1]
        #expect(mention.spans.contains { $0.text == "bob#bbbbbb" && $0.style == .marker })
        #expect(mention.spans.contains { $0.text.contains("hi @alice") && $0.style == .bold })
        #expect(rows[0].spans.contains { $0.text == "bob#bbbbbb" && $0.style == .bold })
    }

    @Test func theActList_putsAlertsFirstWithAMark_andMutedChatsLastAndPlain() {
        let frame = ChatLayout.frame(state(), width: 100, height: 12, clock: "12:12")
        let bar = frame.rows[10]
        #expect(bar.text.contains("Act: #ops 2!, #dev 3, #quiet 7 "))
        #expect(bar.spans.contains { $0.text == "#ops 2!" && $0.style == .barAlert })
        #expect(bar.spans.contains { $0.text == "#quiet 7" && $0.style == .bar })
        let sidebar = frame.lines.joined(separator: "\n")
        #expect(sidebar.contains(" #quiet (muted)"))
        #expect(sidebar.contains("#ops") && sidebar.contains(" 2!"))
    }

    @Test func mentions_matchTheNickInAnyCase_notALongerWord() {
        #expect(Mention.mentions("hi @alice", nick: "alice"))
        #expect(Mention.mentions("@ALICE, look", nick: "alice"))
        #expect(Mention.mentions("thanks @alice.", nick: "alice"))
        #expect(!Mention.mentions("hi @alicia", nick: "alice"))
        #expect(!Mention.mentions("hi @alice_2", nick: "alice"))
        #expect(!Mention.mentions("hi alice", nick: "alice"))
        #expect(!Mention.mentions("hi @", nick: ""))
    }

    @Test func aFlag_takesTwoColumns_asTheTerminalDrawsIt() {
        #expect(DisplayWidth.of("🇮🇱") == 2)
        #expect(DisplayWidth.of("🇯🇵🇫🇷") == 4)
        #expect(DisplayWidth.of("שלום") == 4)
        #expect(DisplayWidth.of("👋") == 2)
    }
}
