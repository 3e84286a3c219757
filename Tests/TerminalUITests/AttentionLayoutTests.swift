import Testing

@testable import TerminalUI

/// What the chat screen shows for the reader's attention (issue 35): where a chat's history
/// begins, mentions, the `Act:` list's alerts and muted chats, right-to-left messages, and the
/// widths of flags.
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

    /// An emoji sequence is one glyph of 2 columns where the terminal joins it, the sum of its
    /// parts where it does not (tmux joins a family, not a skin tone).
    @Test func anEmojiSequence_isAsWideAsTheTerminalDrawsIt() {
        let (family, hand, coder) = ("👨\u{200D}👩\u{200D}👧", "👍🏽", "👩🏽\u{200D}💻")
        #expect(DisplayWidth.of(family) == 6 && DisplayWidth.of(hand) == 4)
        #expect(!DisplayWidth.isJoinedSequence(Character(family)))
        DisplayWidth.$emojiJoining.withValue(DisplayWidth.EmojiJoining(zeroWidthJoiner: true, skinTone: false)) {
            #expect(DisplayWidth.of(family) == 2)
            #expect(DisplayWidth.of("a\(family)b") == 4)
            #expect(DisplayWidth.of(hand) == 4)
            #expect(DisplayWidth.of(coder) == 6, "a sequence with a kind of joining the terminal lacks is its parts")
            #expect(DisplayWidth.prefix("ab\(family)cd", fitting: 4).text == "ab\(family)")
            #expect(DisplayWidth.of("🇮🇱") == 2 && DisplayWidth.of("שלום") == 4)
            #expect(Wrapping.lines("\(family) \(family) \(family)", width: 5) == ["\(family) \(family)", "\(family)"])
        }
        DisplayWidth.$emojiJoining.withValue(DisplayWidth.EmojiJoining(zeroWidthJoiner: true, skinTone: true)) {
            #expect(DisplayWidth.of(hand) == 2 && DisplayWidth.of(coder) == 2 && DisplayWidth.of(family) == 2)
            #expect(!DisplayWidth.isJoinedSequence("e\u{301}"), "a letter with an accent is no emoji sequence")
            #expect(DisplayWidth.of("e\u{301}") == 1)
        }
    }

    @Test func aFlag_takesTwoColumns_asTheTerminalDrawsIt() {
        #expect(DisplayWidth.of("🇮🇱") == 2)
        #expect(DisplayWidth.of("🇯🇵🇫🇷") == 4)
        #expect(DisplayWidth.of("שלום") == 4)
        #expect(DisplayWidth.of("👋") == 2)
    }

    @Test func aMessagesDirection_isItsFirstLetters() {
        #expect(TextDirection.of("שלום") == .rightToLeft)
        #expect(TextDirection.of("12, 🇮🇱 مرحبا ok") == .rightToLeft)  // digits, signs and emoji have no direction
        #expect(TextDirection.of("ok שלום") == .leftToRight)
        #expect(TextDirection.of("ܫܠܡܐ") == .rightToLeft)  // Syriac
        #expect(TextDirection.of("123 !?") == .leftToRight)
        #expect(TextDirection.of("") == .leftToRight)
    }

    /// As `dir=auto` aligns it on the page: a right-to-left message, every line of it, ends at the
    /// pane's right edge; the head stays where every head is.
    @Test func aRightToLeftMessage_endsAtThePanesRightEdge_onEveryLine() {
        var shown = state()
        shown.messages = [
            PaneMessage(shortID: "a", author: "bob#bbbbbb", isOwn: false, time: "12:01", millis: 1, text: "שלום עולם"),
            PaneMessage(shortID: "b", author: "bob#bbbbbb", isOwn: false, time: "12:02", millis: 2, text: "hello world"),
            PaneMessage(
                shortID: "c", author: "bob#bbbbbb", isOwn: false, time: "12:03", millis: 3,
                text: "مرحبا بكم في الغرفة، هذه رسالة طويلة تلتف على عدة أسطر"),
        ]
        let width = 40
        let lines = ChatLayout.paneLines(shown, width: width).map(\.text)
        #expect(lines[0].hasPrefix("12:01 bob#bbbbbb: "))
        #expect(lines[0].hasSuffix("שלום עולם") && DisplayWidth.of(lines[0]) == width, "\(lines[0])")
        #expect(lines[1] == "12:02 bob#bbbbbb: hello world")
        let arabic = Array(lines[2...])
        #expect(arabic.count > 1, "the long message should wrap: \(arabic)")
        for line in arabic {
            #expect(DisplayWidth.of(line) == width && line.last != " ", "not at the right edge: '\(line)'")
        }
        // A deleted message says so in the pane's own direction.
        shown.messages[0].deleted = true
        #expect(ChatLayout.paneLines(shown, width: width)[0].text == "12:01 bob#bbbbbb: (message deleted)")
    }
}
