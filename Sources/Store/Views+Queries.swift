import Identity
import Replica
import SQLite
import Wire

/// A message as shown in a history.
public struct MessageView: Hashable, Sendable {
    public var id: OpID
    public var author: UserID
    public var nick: String?
    public var hlc: HLC
    public var seq: UInt64
    public var text: String
    public var edited: Bool
    public var deleted: Bool
    /// Emoji → reactors, only reactions that are on.
    public var reactions: [String: [UserID]]
    public var attachments: [Attachment]
    public var location: Location?
    public var replyTo: OpID?
    /// In a conversation: the other current members whose read receipt covers this message.
    public var readBy: [UserID] = []
}

/// A task as shown on a board.
public struct TaskView: Hashable, Sendable {
    public var id: OpID
    public var title: String
    public var status: TaskStatus
    public var owner: UserID?
    public var creator: UserID?
    public var createdAt: HLC?
}

/// A directory entry.
public struct ProfileView: Hashable, Sendable {
    public var user: UserID
    public var nick: String?
    public var displayName: String?
    public var status: String?
    public var presence: PresenceMode?
    public var avatar: Attachment?
}

extension Views {
    /// Where a page of history lies: the newest messages, those before a message (the next page
    /// back), or those after one (the next page forward, or what arrived since a message).
    public enum HistoryAnchor: Sendable, Equatable {
        case newest
        case before(OpID)
        case after(OpID)
        /// That message and those after it: a window re-read in place.
        case from(OpID)
    }

    /// Messages of a partition in display order `(hlc, author, seq)`; the newest `limit` if given,
    /// and with `before`, only those that come before that message (a page of older history;
    /// `StoreError.notFound` if it is not a message of the partition). In a conversation, only
    /// messages this node can open are there at all, and only those by members (see `isShown`).
    ///
    /// A private room's history runs over its epochs (`privateRoomChain`): every readable epoch's
    /// messages, merged in display order, so a passphrase change does not cut the room short.
    public func history(_ partition: PartitionID, limit: Int? = nil, before: OpID? = nil) throws -> [MessageView] {
        try history(partition, limit: limit, from: before.map(HistoryAnchor.before) ?? .newest)
    }

    /// The first `limit` messages after `after` in display order (all of them without `limit`),
    /// oldest first: a page forward, or what came since the newest message a reader holds.
    /// `StoreError.notFound` if `after` is not a message of the partition.
    public func history(_ partition: PartitionID, limit: Int? = nil, after: OpID) throws -> [MessageView] {
        try history(partition, limit: limit, from: .after(after))
    }

    /// A page of history at `anchor`, oldest first: with `.newest` and `.before` the last `limit`
    /// messages that qualify, with `.after` and `.from` the first `limit`.
    public func history(_ partition: PartitionID, limit: Int?, from anchor: HistoryAnchor) throws -> [MessageView] {
        let chain = try privateRoomChain(partition)
        guard chain.count < 2 else {
            var merged = try chain.flatMap { try epochHistory($0, limit: nil, from: .newest) }
            merged.sort { a, b in
                if a.hlc != b.hlc { return a.hlc < b.hlc }
                if a.author != b.author { return a.author.publicKey.lexicographicallyPrecedes(b.author.publicKey) }
                return a.seq < b.seq
            }
            switch anchor {
            case .newest:
                return limit.map { Array(merged.suffix($0)) } ?? merged
            case .before(let id):
                guard let index = merged.firstIndex(where: { $0.id == id }) else { throw StoreError.notFound("no message \(id.text) in this room") }
                return limit.map { Array(merged[..<index].suffix($0)) } ?? Array(merged[..<index])
            case .after(let id), .from(let id):
                guard var index = merged.firstIndex(where: { $0.id == id }) else { throw StoreError.notFound("no message \(id.text) in this room") }
                if case .after = anchor { index += 1 }
                return limit.map { Array(merged[index...].prefix($0)) } ?? Array(merged[index...])
            }
        }
        return try epochHistory(partition, limit: limit, from: anchor)
    }

    /// The epochs of a private room up to `partition`, oldest first: each earlier one is the
    /// epoch whose successor is the next (a passphrase change); at most 64. Any other partition
    /// is its own chain.
    public func privateRoomChain(_ partition: PartitionID) throws -> [PartitionID] {
        guard let record = try log.partition(partition), record.descriptor.kind == .privateRoom else { return [partition] }
        var chain = [partition]
        var pid = record.pid
        let earlier = try database.cachedStatement("SELECT p.pid, p.id FROM private_rooms r JOIN partitions p ON p.pid = r.pid WHERE r.successor = ?")
        while chain.count < 64, let row = try earlier.firstRow(.integer(pid), map: { ($0.int64(0), $0.blob(1)) }), let id = PartitionID(bytes: row.1) {
            guard !chain.contains(id) else { break }
            chain.insert(id, at: 0)
            pid = row.0
        }
        return chain
    }

    private func epochHistory(_ partition: PartitionID, limit: Int?, from anchor: HistoryAnchor) throws -> [MessageView] {
        guard let record = try log.partition(partition) else { throw StoreError.unknownPartition(partition) }
        // The page lies strictly between two keys of the order `(hlc, author key, seq)`, compared
        // as row values; their HLCs alone let SQLite walk `messages_in_order` from either end.
        // An empty key sorts before every author's, so `(start, [], min)` admits all of `start`.
        var lower: OrderKey = (0, [], .min)
        var upper: OrderKey = (.max, [UInt8](repeating: 0xFF, count: 33), .max)
        switch anchor {
        case .newest: break
        case .before(let id): upper = try orderKey(of: id, in: record)
        case .after(let id): lower = try orderKey(of: id, in: record)
        case .from(let id):
            // Just below the message's own key, so the strict comparison admits it.
            let key = try orderKey(of: id, in: record)
            lower = (key.hlc, key.key, key.seq - 1)
        }
        // A room whose policy gives new joiners no history shows this node's user only what was
        // written after they joined. Hidden, not secret: the ops are
        // stored, and anyone may fetch them (docs/ARCHITECTURE.md, *Room policies*).
        if case .room = record.descriptor, let policy = try roomPolicy(pid: record.pid), !policy.policy.historyForNewJoiners,
            let joinedAt = try log.joinedAt(partition)
        {
            let start = Int64(bitPattern: HLC(wallMillis: joinedAt, counter: 0).raw)
            if start > lower.hlc { lower = (start, [], .min) }
        }
        // Walked from the anchor's side: back from the upper key, or forward from the lower one.
        let direction =
            switch anchor {
            case .after, .from: "ASC"
            case .newest, .before: "DESC"
            }
        let statement = try database.prepare(
            """
            SELECT * FROM (
                SELECT \(Self.messageColumns)
                FROM messages m JOIN authors a ON a.aid = m.aid \(Self.personJoins)
                WHERE m.pid = ? AND m.hlc >= ? AND m.hlc <= ? AND (m.hlc, a.key, m.seq) > (?, ?, ?) AND (m.hlc, a.key, m.seq) < (?, ?, ?)
                ORDER BY m.hlc \(direction), a.key \(direction), m.seq \(direction) LIMIT ?
            ) ORDER BY hlc, key, seq
            """)
        var messages = try statement.rows(
            .integer(record.pid), .integer(lower.hlc), .integer(upper.hlc), .integer(lower.hlc), .blob(lower.key), .integer(lower.seq),
            .integer(upper.hlc), .blob(upper.key), .integer(upper.seq), .integer(Int64(limit ?? Int(Int64.max))),
            map: Self.messageView)
        if messages.count <= Self.reactionsReadPerMessage {
            // A page of a long room: its messages' own reactions, not every one the room holds.
            for i in messages.indices { messages[i].reactions = try reactions(to: messages[i].id, pid: record.pid) }
        } else {
            let reactions = try database.prepare(
                """
                SELECT r.target, r.emoji, coalesce(pa.key, a.key) AS reactor FROM reactions r JOIN authors a ON a.aid = r.reactor
                LEFT JOIN devices d ON d.device_aid = r.reactor LEFT JOIN authors pa ON pa.aid = d.person_aid
                WHERE r.pid = ? AND r.on_ = 1 ORDER BY r.emoji, reactor
                """
            ).rows(.integer(record.pid)) { (OpID(bytes: $0.blob(0))!, $0.text(1), UserID(publicKey: $0.blob(2))!) }
            var byTarget: [OpID: [String: [UserID]]] = [:]
            for (target, emoji, reactor) in reactions { byTarget[target, default: [:]][emoji, default: []].append(reactor) }
            for i in messages.indices { messages[i].reactions = byTarget[messages[i].id] ?? [:] }
        }
        try addReadBy(to: &messages, record: record, partition: partition)
        return messages
    }

    /// A message's key in the display order; `StoreError.notFound` unless it is a message of
    /// `record`'s partition.
    private typealias OrderKey = (hlc: Int64, key: [UInt8], seq: Int64)
    private func orderKey(of id: OpID, in record: PartitionRecord) throws -> OrderKey {
        guard let row = try messageRow(id), row.pid == record.pid,
            let found = try database.cachedStatement("SELECT m.hlc, a.key, m.seq FROM messages m JOIN authors a ON a.aid = m.aid WHERE m.oid = ?")
                .firstRow(.integer(row.oid), map: { ($0.int64(0), $0.blob(1), $0.int64(2)) })
        else { throw StoreError.notFound("no message \(id.text) in this \(record.descriptor.kind == .room ? "room" : "conversation")") }
        return found
    }

    /// The columns `messageView` reads, in its order (`m`: messages, `a`: authors, `p`: profiles,
    /// `pa`: the author's person when the author is a device). `a.key` stays the order's key.
    private static let messageColumns =
        "m.op_id, a.key, m.hlc, m.seq, m.text, m.edited, m.deleted, m.attachments, m.latitude, m.longitude, m.reply_to, p.nick, coalesce(pa.key, a.key)"

    /// Joins a message's author (`m.aid`) to its person and the person's profile: a device's
    /// messages are shown as its person's (docs/DESIGN.md §3.8).
    static let personJoins =
        "LEFT JOIN devices d ON d.device_aid = m.aid LEFT JOIN authors pa ON pa.aid = d.person_aid LEFT JOIN profiles p ON p.aid = coalesce(d.person_aid, m.aid)"

    /// A message from a row of `messageColumns`, without its reactions and read receipts.
    private static func messageView(_ row: Statement) throws -> MessageView {
        MessageView(
            id: OpID(bytes: row.blob(0))!, author: UserID(publicKey: row.blob(12))!, nick: row.isNull(11) ? nil : row.text(11),
            hlc: HLC(raw: UInt64(bitPattern: row.int64(2))), seq: UInt64(row.int64(3)), text: row.text(4),
            edited: row.int(5) != 0, deleted: row.int(6) != 0, reactions: [:], attachments: decodeAttachments(row.blob(7)),
            location: row.isNull(8) ? nil : Location(latitude: row.double(8), longitude: row.double(9)),
            replyTo: row.isNull(10) ? nil : OpID(bytes: row.blob(10)))
    }

    /// Up to this many messages (a page: the web UI asks for 100–300, the terminal chat up to 500) have
    /// their reactions read one message at a time; more read the partition's all at once.
    private static let reactionsReadPerMessage = 1_000

    /// The reactions that are on for one message: emoji → reactors, in the order of `history`.
    private func reactions(to target: OpID, pid: Int64) throws -> [String: [UserID]] {
        var reactions: [String: [UserID]] = [:]
        for (emoji, reactor) in try database.cachedStatement(
            """
            SELECT r.emoji, coalesce(pa.key, a.key) AS reactor FROM reactions r JOIN authors a ON a.aid = r.reactor
            LEFT JOIN devices d ON d.device_aid = r.reactor LEFT JOIN authors pa ON pa.aid = d.person_aid
            WHERE r.pid = ? AND r.target = ? AND r.on_ = 1 ORDER BY r.emoji, reactor
            """
        ).rows(.integer(pid), .blob(target.bytes), map: { ($0.text(0), UserID(publicKey: $0.blob(1))!) }) {
            reactions[emoji, default: []].append(reactor)
        }
        return reactions
    }

    /// In a conversation, which other current members' read receipts cover each message.
    private func addReadBy(to messages: inout [MessageView], record: PartitionRecord, partition: PartitionID) throws {
        guard record.descriptor.kind == .conversation else { return }
        let receipts = try readReceipts(partition)
        for i in messages.indices {
            messages[i].readBy = receipts.filter { $0.key != messages[i].author && $0.value >= messages[i].hlc }.keys.sorted()
        }
    }

    /// Read receipts of a conversation: for each current member who sent one, the newest message
    /// (its HLC) they said they read. Members opt in per read (`parley read --receipt`).
    public func readReceipts(_ partition: PartitionID) throws -> [UserID: HLC] {
        guard let record = try log.partition(partition), let conversation = try conversation(partition) else { return [:] }
        let rows = try database.cachedStatement(
            """
            SELECT coalesce(pa.key, a.key), r.position FROM read_receipts r JOIN authors a ON a.aid = r.aid
            LEFT JOIN devices d ON d.device_aid = r.aid LEFT JOIN authors pa ON pa.aid = d.person_aid WHERE r.pid = ?
            """
        ).rows(.integer(record.pid)) { (UserID(publicKey: $0.blob(0)), HLC(raw: UInt64(bitPattern: $0.int64(1)))) }
        var receipts: [UserID: HLC] = [:]
        for case let (user?, position) in rows where conversation.members.current.contains(user) { receipts[user] = max(receipts[user] ?? position, position) }
        return receipts
    }

    /// One message by id, with the partition it lives in: for commands given an id, and for the
    /// web API's answer to a post, an edit or a reaction.
    ///
    /// There is no index on message ids (a hash-keyed index made every insert 2× slower), so the
    /// messages are read newest first and the search stops at the id: a message just written is
    /// found at once, an old one after the newer ones, and an unknown id costs one pass over the
    /// table. Only the one message is read, with its own reactions.
    public func message(_ id: OpID) throws -> (partition: PartitionID, message: MessageView)? {
        guard let (oid, pid) = try messageRow(id), let descriptor = try log.descriptor(pid: pid), let record = try log.partition(descriptor.id) else {
            return nil
        }
        var messages = try database.prepare(
            """
            SELECT \(Self.messageColumns)
            FROM messages m JOIN authors a ON a.aid = m.aid \(Self.personJoins)
            WHERE m.oid = ?
            """
        ).rows(.integer(oid), map: Self.messageView)
        guard !messages.isEmpty else { return nil }
        messages[0].reactions = try reactions(to: id, pid: pid)
        try addReadBy(to: &messages, record: record, partition: record.id)
        return (record.id, messages[0])
    }

    /// The row and partition of the message with this id, searched newest first (no index is
    /// keyed by ids): what `message(_:)` and a page of history `before` a message start from.
    private func messageRow(_ id: OpID) throws -> (oid: Int64, pid: Int64)? {
        try database.cachedStatement("SELECT oid, pid FROM messages WHERE op_id = ? ORDER BY oid DESC LIMIT 1")
            .firstRow(.blob(id.bytes)) { ($0.int64(0), $0.int64(1)) }
    }

    /// Tasks of a partition, oldest first; deleted tasks and updates whose task never arrived are left out.
    public func tasks(_ partition: PartitionID) throws -> [TaskView] {
        guard let record = try log.partition(partition) else { throw StoreError.unknownPartition(partition) }
        return try database.prepare(
            """
            SELECT task_id, state FROM tasks WHERE pid = ? AND created = 1 AND deleted = 0 ORDER BY created_hlc, task_id
            """
        ).rows(.integer(record.pid)) { row in
            let state = try TaskState(decoding: row.blob(1))
            return TaskView(
                id: OpID(bytes: row.blob(0))!, title: state.title.value, status: state.status.value, owner: state.owner.value,
                creator: state.creator, createdAt: state.createdAt)
        }
    }

    /// The task with this id and its partition, if it exists and is not deleted.
    public func task(_ id: OpID) throws -> (partition: PartitionID, task: TaskView)? {
        // The partitions outside: each is one search of the tasks' key (pid, task_id), where a
        // plain join scanned the whole tasks table.
        let rows = try database.prepare(
            "SELECT p.id FROM partitions p CROSS JOIN tasks t ON t.pid = p.pid AND t.task_id = ? WHERE t.created = 1 AND t.deleted = 0"
        ).rows(.blob(id.bytes)) { PartitionID(bytes: $0.blob(0))! }
        guard let partition = rows.first, let task = try tasks(partition).first(where: { $0.id == id }) else { return nil }
        return (partition, task)
    }

    /// Whether a conversation's encrypted op by `author` at `hlc` takes effect on the views: by a
    /// current member, or by a former member from before their removal or leave (a removed
    /// member keeps old keys and could still write with them).
    static func isShown(author: UserID, hlc: HLC, _ membership: Membership.State) -> Bool {
        guard membership.everMember.contains(author) else { return false }
        guard let removed = membership.removedAt[author], !membership.current.contains(author) else { return true }
        return hlc < removed
    }

    /// A conversation's name and members. The name is empty on a node that cannot read it
    /// (a carrier); the members are plaintext, so every replica knows them.
    public func conversation(_ partition: PartitionID) throws -> (name: String, members: Membership.State)? {
        guard let record = try log.partition(partition), record.descriptor.kind == .conversation else { return nil }
        let name = try database.scalar("SELECT name FROM conversations WHERE pid = ?", .integer(record.pid), as: String.self) ?? ""
        return (name, try keys.membershipState(pid: record.pid))
    }

    /// The read marker `owner` keeps for a partition (HLC of the newest message read).
    public func readMarker(owner: UserID, partition: PartitionID) throws -> HLC? {
        try database.scalar("SELECT position FROM read_markers WHERE owner = ? AND target = ?", .blob(owner.publicKey), .blob(partition.bytes), as: Int64.self)
            .map { HLC(raw: UInt64(bitPattern: $0)) }
    }

    /// Whether `owner` muted this chat (no bell, no notification; unread still counted). A
    /// private room's mute follows it through passphrase changes: the newest epoch with a
    /// mute or unmute of its own decides.
    public func isMuted(_ partition: PartitionID, owner: UserID) throws -> Bool {
        let statement = try database.cachedStatement("SELECT muted FROM mutes WHERE owner = ? AND target = ?")
        for epoch in try privateRoomChain(partition).reversed() {
            if let muted = try statement.firstRow(.blob(owner.publicKey), .blob(epoch.bytes), map: { $0.int64(0) != 0 }) { return muted }
        }
        return false
    }

    /// Messages after the reader's marker, not by the reader, not deleted: computed, never replicated.
    public func unreadCount(_ partition: PartitionID, reader: UserID) throws -> Int {
        guard let record = try log.partition(partition) else { return 0 }
        let marker = try readMarker(owner: reader, partition: partition)?.raw ?? 0
        let readerAID = try log.existingAuthorID(reader) ?? -1
        return try database.scalar(
            "SELECT count(*) FROM messages WHERE pid = ? AND hlc > ? AND aid != ? AND deleted = 0",
            .integer(record.pid), .integer(Int64(bitPattern: marker)), .integer(readerAID)) ?? 0
    }

    /// The first message `unreadCount` counts (after the reader's marker, or after `marker` when
    /// given: where the unread began when a chat was opened), in display order, over a private
    /// room's epochs; nil when there is none.
    public func firstUnread(_ partition: PartitionID, reader: UserID, after marker: HLC?) throws -> OpID? {
        let position = try marker ?? readMarker(owner: reader, partition: partition)
        let readerAID = try log.existingAuthorID(reader) ?? -1
        let statement = try database.cachedStatement(
            """
            SELECT m.op_id, m.hlc, a.key, m.seq FROM messages m JOIN authors a ON a.aid = m.aid
            WHERE m.pid = ? AND m.hlc > ? AND m.aid != ? AND m.deleted = 0 ORDER BY m.hlc, a.key, m.seq LIMIT 1
            """)
        var first: (id: OpID, hlc: Int64, key: [UInt8], seq: Int64)?
        for epoch in try privateRoomChain(partition) {
            guard let record = try log.partition(epoch),
                let row = try statement.firstRow(
                    .integer(record.pid), .integer(Int64(bitPattern: position?.raw ?? 0)), .integer(readerAID),
                    map: { (OpID(bytes: $0.blob(0))!, $0.int64(1), $0.blob(2), $0.int64(3)) })
            else { continue }
            if let current = first {
                let earlier =
                    row.1 != current.hlc ? row.1 < current.hlc : row.2 != current.key ? row.2.lexicographicallyPrecedes(current.key) : row.3 < current.seq
                guard earlier else { continue }
            }
            first = row
        }
        return first?.id
    }

    /// The HLC of the newest message in a partition (what `read` marks as read).
    public func newestMessageHLC(_ partition: PartitionID) throws -> HLC? {
        guard let record = try log.partition(partition) else { return nil }
        return try database.scalar("SELECT max(hlc) FROM messages WHERE pid = ?", .integer(record.pid), as: Int64.self).map { HLC(raw: UInt64(bitPattern: $0)) }
    }
}
