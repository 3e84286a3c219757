import Identity
import JSONViews
import Presentation
import Replica
import Store

/// `parley history`: a room's or conversation's messages, oldest first, in the order every
/// replica agrees on (hlc, author, seq).
struct HistoryCommand: Command {
    let name = "history"
    let summary = "show a room's or conversation's messages (--json for scripts)"
    let usage = ["history (--room NAME | --conversation ID) [--limit N] [--ids] [--json]"]
    static let room = Option.value("room", "NAME", "the room (you must have joined it)")
    static let conversation = Option.value("conversation", "ID", "a private conversation you are (or were) in")
    static let limit = Option.value("limit", "N", "only the newest N messages (text output shows the newest 50 unless given)") {
        text, command throws(CLIError) in try Lookup.positiveInteger(text, option: "limit", command: command)
    }
    static let ids = Flag.flag("ids", "start each line with the message's short id (accepted by edit, delete, react)")
    static let json = Flag.flag("json", "print one JSON array of message objects (all messages unless --limit)")
    let options = [
        Self.room.spec, Self.conversation.spec, Self.limit.spec, Self.ids.spec, Self.json.spec,
    ]
    let details = [
        "JSON fields of each message: id, author (user id), nick (or null), time (ISO 8601 UTC with milliseconds), "
            + "hlc (integer), seq, text, edited, deleted, reactions (object: emoji -> array of user ids), "
            + "attachments (array of {name, size, mime, hash}), location (null or {lat, lon}), reply_to (id or null)."
    ]
    let examples = ["history --room lobby", "history --room lobby --limit 10 --ids", "history --conversation 3fkq7zxa --json"]

    /// How many messages text output shows when no --limit is given: a screenful, not a flood.
    static let defaultTextLimit = 50

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        let limit = try arguments.value(Self.limit)
        let json = arguments[Self.json]
        let room = try context.target(room: try arguments.value(Self.room), conversation: try arguments.value(Self.conversation), command: name)
        let store = try context.store()

        if json {
            let messages = try context.storeCall { try store.views.history(room.id, limit: limit) }
            context.output.json(messages.map(ViewJSON.message))
            return 0
        }
        // One more than shown tells whether older messages were left out.
        let shown = limit ?? Self.defaultTextLimit
        var messages = try context.storeCall { try store.views.history(room.id, limit: shown < Int.max ? shown + 1 : shown) }
        guard !messages.isEmpty else {
            context.output.line("No messages in \(room.label) yet; write one with `parley send \(room.option) TEXT`.")
            return 0
        }
        if messages.count > shown {
            messages.removeFirst(messages.count - shown)
            context.output.line("(older messages not shown; use --limit N to see more)")
        }
        let now = context.nowMillis
        for message in messages {
            context.output.line(Self.line(message, nowMillis: now, showIDs: arguments[Self.ids]))
        }
        return 0
    }

    /// `12:03 alice#k3v9q2: hello (edited) [👍 2]`, continuation lines indented under the text.
    static func line(_ message: MessageView, nowMillis: UInt64, showIDs: Bool) -> String {
        var head = Format.shortTime(millis: message.hlc.wallMillis, nowMillis: nowMillis) + " "
        if showIDs { head = Format.shortID(message.id) + " " + head }
        head += Format.person(message.author, nick: message.nick) + ": "
        var body: String
        if message.deleted {
            body = "(message deleted)"
        } else {
            let indent = String(repeating: " ", count: head.count)
            body = Format.safe(message.text).split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\n" + indent)
            if message.edited { body += " (edited)" }
            for attachment in message.attachments {
                body += (body.isEmpty ? "" : " ") + "[\(Format.safe(attachment.name, keepNewlines: false)), \(Format.byteCount(attachment.size))]"
            }
            if let location = message.location { body += " (at \(location.latitude),\(location.longitude))" }
        }
        if !message.reactions.isEmpty {
            let summary = message.reactions.sorted { $0.key < $1.key }.map { "\(Format.safe($0.key, keepNewlines: false)) \($0.value.count)" }
            body += " [" + summary.joined(separator: ", ") + "]"
        }
        return head + body
    }
}
