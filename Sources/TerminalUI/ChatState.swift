/// Everything the chat screen shows, as plain values. The session fills it from the store and
/// the node; `ChatLayout` turns it into a `Frame`. Texts here are raw (as stored, possibly
/// hostile); the layout cleans every one of them before it reaches a row.
public struct ChatState: Sendable, Equatable {
    /// You, as `nick#short`.
    public var me = ""
    /// Rooms and conversations, in sidebar order.
    public var entries: [SidebarEntry] = []
    /// The key of the open room or conversation.
    public var current: String?
    /// The open one's messages on hand, oldest first: a window of its history (the session
    /// pages it as the reader scrolls, so it stays small however long the chat is).
    public var messages: [PaneMessage] = []
    /// Whether `messages` starts at the chat's first message (the pane says so above it).
    public var historyBegins = false
    /// Index in `messages` of the first message that was unread when the room was opened.
    public var unreadFrom: Int?
    /// Local notices (command results, errors, arrivals), per room key; "" for every room.
    public var notices: [String: [Notice]] = [:]
    /// Who is online in the open room or conversation (`nick#short`).
    public var online: [String] = []
    /// Who is typing in the open room or conversation.
    public var typing: [String] = []
    /// The input line.
    public var input = LineEditor()
    /// Lines scrolled up from the newest (0: following the newest).
    public var scroll = 0
    /// Whether message lines start with their short id (for /edit, /delete, /react).
    public var showIDs = false
    /// A few words about the node (`2 peers`), shown in the status bar.
    public var nodeSummary = ""
    /// The prompt of a secret being asked for (`passphrase for #ops: `), shown instead of `> `
    /// while `input.isSecret`.
    public var secretPrompt: String?

    public init() {}

    /// The open entry.
    public var currentEntry: SidebarEntry? { entries.first { $0.key == current } }

    /// Adds a notice to the open room (or to `key`).
    public mutating func notice(_ text: String, kind: Notice.Kind = .info, millis: UInt64, in key: String? = nil) {
        notices[key ?? current ?? "", default: []].append(Notice(text: text, kind: kind, millis: millis))
        if notices[key ?? current ?? ""]!.count > 200 { notices[key ?? current ?? ""]!.removeFirst() }
    }

    /// The entry after (or before) the open one, wrapping around.
    public func neighbour(after: Bool) -> String? {
        guard !entries.isEmpty else { return nil }
        let index = entries.firstIndex { $0.key == current } ?? 0
        let next = (index + (after ? 1 : entries.count - 1)) % entries.count
        return entries[next].key
    }
}

/// A room or conversation in the sidebar.
public struct SidebarEntry: Sendable, Equatable {
    public enum Kind: Sendable, Equatable { case room, conversation }
    public var key: String
    /// `#lobby`, or the conversation's name.
    public var label: String
    public var kind: Kind
    public var unread: Int
    /// Whether a mention of you or a private message is among the unread (the status bar's
    /// `Act:` list highlights it).
    public var alert = false
    /// Whether you muted it: no bell, no highlight; its unread are still counted.
    public var muted = false
    /// A room's topic (its policy), shown in the header; empty for none.
    public var topic: String

    public init(key: String, label: String, kind: Kind, unread: Int, topic: String = "", alert: Bool = false, muted: Bool = false) {
        (self.key, self.label, self.kind, self.unread, self.topic) = (key, label, kind, unread, topic)
        (self.alert, self.muted) = (alert, muted)
    }
}

/// A message as the pane shows it.
public struct PaneMessage: Sendable, Equatable {
    public var shortID: String
    /// `nick#short`.
    public var author: String
    public var isOwn: Bool
    /// `12:03`.
    public var time: String
    /// When it was written (orders notices among messages).
    public var millis: UInt64
    public var text: String
    /// Whether it mentions you (`@nick`, `Mention`).
    public var mentionsMe: Bool
    public var edited: Bool
    public var deleted: Bool
    /// Emoji and how many reacted with it, in display order.
    public var reactions: [Reaction]
    /// `map.png, 1.2 KiB` per attachment.
    public var attachments: [String]

    public struct Reaction: Sendable, Equatable {
        public var emoji: String
        public var count: Int
        public init(emoji: String, count: Int) { (self.emoji, self.count) = (emoji, count) }
    }

    public init(
        shortID: String, author: String, isOwn: Bool, time: String, millis: UInt64, text: String, mentionsMe: Bool = false,
        edited: Bool = false, deleted: Bool = false, reactions: [Reaction] = [], attachments: [String] = []
    ) {
        (self.shortID, self.author, self.isOwn, self.time, self.millis) = (shortID, author, isOwn, time, millis)
        self.mentionsMe = mentionsMe
        (self.text, self.edited, self.deleted, self.reactions, self.attachments) = (text, edited, deleted, reactions, attachments)
    }
}

/// A line the chat itself adds to a pane: a command's answer, an error, someone arriving.
public struct Notice: Sendable, Equatable {
    public enum Kind: Sendable, Equatable { case info, error }
    public var text: String
    public var kind: Kind
    public var millis: UInt64

    public init(text: String, kind: Kind, millis: UInt64) { (self.text, self.kind, self.millis) = (text, kind, millis) }
}
