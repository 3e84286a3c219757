import Testing

@testable import TerminalUI

@Suite struct DisplayWidthTests {
    @Test func asciiAccentsWideAndCombining() {
        #expect(DisplayWidth.of("hello") == 5)
        #expect(DisplayWidth.of("café") == 4)
        #expect(DisplayWidth.of("cafe\u{301}") == 4)  // combining acute takes no column
        #expect(DisplayWidth.of("日本") == 4)
        #expect(DisplayWidth.of("👍") == 2)
        #expect(DisplayWidth.of("a\u{200D}b") == 2)
    }

    @Test func fitCutsWithEllipsisAndPads() {
        #expect(DisplayWidth.fit("abc", 5) == "abc  ")
        #expect(DisplayWidth.fit("abcdef", 4) == "abc…")
        // A wide character that does not fit leaves a space rather than half a glyph.
        #expect(DisplayWidth.fit("a日本", 4) == "a日…")
        #expect(DisplayWidth.fit("日本語", 4) == "日… ")
    }
}

@Suite struct ScreenTextTests {
    @Test func escapeSequencesAndControlsBecomeReplacementCharacters() {
        let hostile = "\u{1B}]0;pwned\u{07}\u{1B}[2J\r\u{9B}31m\u{7F}"
        let clean = ScreenText.clean(hostile)
        #expect(!clean.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
        #expect(clean == "\u{FFFD}]0;pwned\u{FFFD}\u{FFFD}[2J\u{FFFD}\u{FFFD}31m\u{FFFD}")
    }

    @Test func bidiOverridesAreNeutralisedAndNewlinesKeptOnlyWhenAsked() {
        #expect(ScreenText.clean("a\u{202E}b\u{2066}c") == "a\u{FFFD}b\u{FFFD}c")
        #expect(ScreenText.clean("a\nb") == "a\nb")
        #expect(ScreenText.line("a\nb\tc") == "a\u{FFFD}b c")
        #expect(ScreenText.clean("héllo 👋 日本") == "héllo 👋 日本")
    }
}

@Suite struct WrappingTests {
    @Test func breaksAtSpacesWithinWidth() {
        let lines = Wrapping.lines("the quick brown fox jumps over the lazy dog", width: 10)
        #expect(lines == ["the quick", "brown fox", "jumps over", "the lazy", "dog"])
        #expect(lines.allSatisfy { DisplayWidth.of($0) <= 10 })
    }

    @Test func longWordsBreakBetweenGraphemesAndWideCharactersNeverSplit() {
        #expect(Wrapping.lines("abcdefghij", width: 4) == ["abcd", "efgh", "ij"])
        let lines = Wrapping.lines("日本語のテキスト", width: 5)
        #expect(lines.allSatisfy { DisplayWidth.of($0) <= 5 })
        #expect(lines.joined() == "日本語のテキスト")
    }

    @Test func laterLinesAreNarrowerByTheIndentAndNewlinesBreak() {
        let lines = Wrapping.lines("aaa bbb ccc ddd", width: 8, indent: 4)
        #expect(lines == ["aaa bbb", "ccc", "ddd"])
        #expect(Wrapping.lines("one\ntwo", width: 20) == ["one", "two"])
        #expect(Wrapping.lines("", width: 20) == [""])
    }
}

@Suite struct ChatInputTests {
    @Test func linesAreMessagesOrCommands() {
        #expect(ChatInput(parsing: "hello") == .message("hello"))
        #expect(ChatInput(parsing: "   ") == .empty)
        #expect(ChatInput(parsing: "//not a command") == .message("/not a command"))
        #expect(ChatInput(parsing: "/JOIN #dev") == .command(name: "join", arguments: ["#dev"], rest: "#dev"))
        #expect(
            ChatInput(parsing: "/task add \"book the room\" now")
                == .command(name: "task", arguments: ["add", "book the room", "now"], rest: "add \"book the room\" now"))
        #expect(ChatInput(parsing: "/quit") == .command(name: "quit", arguments: [], rest: ""))
    }

    @Test func splitHonoursQuotesAndBackslashes() {
        #expect(ChatInput.split("a 'b c' d\\ e \"\"") == ["a", "b c", "d e", ""])
        #expect(ChatInput.split("  ") == [])
        #expect(ChatInput.split("\"unclosed quote") == ["unclosed quote"])
    }
}

@Suite struct LineEditorTests {
    func type(_ text: String, into editor: inout LineEditor) {
        for character in text { _ = editor.handle(.character(character)) }
    }

    /// Keys arrive a scalar at a time: a family typed as its seven scalars is one grapheme of the
    /// line, so the cursor stands after its one glyph and one Backspace removes it.
    @Test func scalarsThatJoinAGrapheme_makeOneCharacterOfTheLine() {
        var editor = LineEditor()
        for scalar in "a👨\u{200D}👩\u{200D}👧e\u{301}🇮🇱".unicodeScalars { _ = editor.handle(.character(Character(scalar))) }
        #expect(editor.characters.count == 4 && editor.cursor == 4)
        #expect(editor.text == "a👨\u{200D}👩\u{200D}👧e\u{301}🇮🇱")
        DisplayWidth.$emojiJoining.withValue(DisplayWidth.EmojiJoining(zeroWidthJoiner: true, skinTone: true)) {
            #expect(editor.visible(width: 40).cursorColumn == 6)
        }
        _ = editor.handle(.left)
        _ = editor.handle(.left)
        _ = editor.handle(.backspace)
        #expect(editor.text == "ae\u{301}🇮🇱")
    }

    @Test func tabCompletesANickname_withItsAt_orToTheCommonStart() {
        let names = ["gwen", "Gwendolyn", "bob", "bob"]
        var editor = LineEditor()
        type("hi @b", into: &editor)
        var changed = editor.complete(from: names)
        #expect(changed && editor.text == "hi @bob " && editor.cursor == 8)
        editor = LineEditor()
        type("GW", into: &editor)
        changed = editor.complete(from: names)
        #expect(changed && editor.text == "gwen", "two matches: their common start, in the names' case")
        changed = editor.complete(from: names)
        #expect(!changed, "nothing more in common: left to the caller")
        editor = LineEditor()
        type("hi @zed", into: &editor)
        changed = editor.complete(from: names)
        #expect(!changed && editor.text == "hi @zed")
        editor = LineEditor()
        type("hi ", into: &editor)
        changed = editor.complete(from: names)
        #expect(!changed, "no word before the cursor: Tab switches chats")
        editor.isSecret = true
        type("b", into: &editor)
        changed = editor.complete(from: names)
        #expect(!changed, "never in a passphrase")
    }

    @Test func editingKeysMoveAndDelete() {
        var editor = LineEditor()
        type("hello world", into: &editor)
        _ = editor.handle(.control("w"))
        #expect(editor.text == "hello ")
        _ = editor.handle(.home)
        _ = editor.handle(.delete)
        type("J", into: &editor)
        #expect(editor.text == "Jello ")
        _ = editor.handle(.end)
        _ = editor.handle(.backspace)
        _ = editor.handle(.left)
        _ = editor.handle(.control("k"))
        #expect(editor.text == "Jell")
        _ = editor.handle(.control("u"))
        #expect(editor.isEmpty)
    }

    @Test func historyRecallsSentLinesAndRestoresTheDraft() {
        var editor = LineEditor()
        type("first", into: &editor)
        #expect(editor.handle(.enter) == .submitted("first"))
        type("second", into: &editor)
        #expect(editor.handle(.enter) == .submitted("second"))
        type("draft", into: &editor)
        _ = editor.handle(.up)
        #expect(editor.text == "second")
        _ = editor.handle(.up)
        _ = editor.handle(.up)
        #expect(editor.text == "first")
        _ = editor.handle(.down)
        _ = editor.handle(.down)
        #expect(editor.text == "draft")
        #expect(editor.handle(.pageUp) == .unhandled)
    }

    @Test func visiblePartFollowsTheCursorByDisplayWidth() {
        var editor = LineEditor()
        type("日本語日本語日本語", into: &editor)
        let shown = editor.visible(width: 8)
        #expect(DisplayWidth.of(shown.text) <= 8)
        #expect(shown.cursorColumn <= 7)
        #expect(shown.text.hasSuffix("語"))
    }
}
