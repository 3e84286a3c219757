import Identity
import Presentation
import Replica
import Store
import TerminalUI

/// What calls for attention: a mention of you (`@nick`) or a private message rings the
/// terminal's bell once per reload and marks its chat `!` in the `Act:` list and the sidebar
/// until it is read; a muted chat does neither. And who left or joined a conversation, as a
/// notice in it (docs/USAGE.md, *Mentions, the bell and mute*).
extension ChatSession {
    /// Compares each chat's unread count with the last reload's: a rise in a conversation is a
    /// private message; a rise in a room is looked through for mentions (its newest unread, at
    /// most 50). The first reload only marks, it does not ring for what waited at start; a chat
    /// that appears later (a new conversation) starts from none.
    func noteArrivals(_ store: ReplicaStore) {
        var ring = false
        for index in state.entries.indices {
            let entry = state.entries[index]
            let before = unreadSeen[entry.key] ?? 0
            unreadSeen[entry.key] = entry.unread
            if entry.unread == 0 || entry.muted { alerted.remove(entry.key) }
            if !entry.muted, entry.unread > before {
                if entry.kind == .conversation || unreadMentionMe(store, entry: entry, newest: min(entry.unread - before, 50)) {
                    alerted.insert(entry.key)
                    if arrivalsNoted { ring = true }
                }
            }
            state.entries[index].alert = alerted.contains(entry.key)
        }
        arrivalsNoted = true
        if ring { terminal.bell() }
    }

    /// Whether one of the newest `count` messages of a room (by others, not deleted) mentions you;
    /// ten more are read, for your own messages among them (never unread).
    private func unreadMentionMe(_ store: ReplicaStore, entry: SidebarEntry, newest count: Int) -> Bool {
        guard myNick != nil, let target = targets[entry.key], let messages = try? store.views.history(target.id, limit: count + 10) else { return false }
        return messages.contains { !$0.deleted && $0.author != me && mentions($0.text) }
    }

    /// Whether `text` mentions you.
    func mentions(_ text: String) -> Bool {
        myNick.map { Mention.mentions(text, nick: $0) } ?? false
    }

    /// Says in each conversation who left it or joined it since the last reload.
    func noteMembership(_ targets: [String: ChatTarget], nicknames: [UserID: String?]) {
        for (key, target) in targets {
            guard case .conversation(_, let list) = target else { continue }
            let members = Set(list)
            defer { membersSeen[key] = members }
            guard let before = membersSeen[key] else { continue }
            func display(_ user: UserID) -> String { Format.person(user, nick: nicknames[user] ?? nil) }
            for user in before.subtracting(members).sorted() where user != me {
                state.notice("\(display(user)) left the conversation", millis: now, in: key)
            }
            for user in members.subtracting(before).sorted() where user != me {
                state.notice("\(display(user)) joined the conversation", millis: now, in: key)
            }
        }
    }
}
