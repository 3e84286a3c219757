import Identity
import Wire

/// How much of a room's history its replicas keep (docs/DESIGN.md §3.4, *Room policies*).
public enum Retention: Hashable, Sendable, CustomStringConvertible {
    /// Everything.
    case all
    /// Messages, edits and reactions stamped within the last `N` days (1…36,500).
    case days(UInt32)
    /// The last `N` messages (1…1,000,000), and the edits and reactions stamped after the oldest
    /// of them.
    case lastMessages(UInt32)

    public static let maxDays: UInt32 = 36_500
    public static let maxMessages: UInt32 = 1_000_000

    /// How it is written on the command line and shown: `all`, `30d`, `500m`.
    public var description: String {
        switch self {
        case .all: "all"
        case .days(let n): "\(n)d"
        case .lastMessages(let n): "\(n)m"
        }
    }

    /// Words for people: "everything", "30 days", "the last 500 messages".
    public var phrase: String {
        switch self {
        case .all: "everything"
        case .days(let n): n == 1 ? "1 day" : "\(n) days"
        case .lastMessages(let n): n == 1 ? "the last message" : "the last \(n) messages"
        }
    }

    /// Parses `all`, `ND` (days) or `NM` (messages), e.g. `30d`, `500m`; nil for anything else
    /// or a count outside the bounds.
    public init?(text: String) {
        let text = text.lowercased()
        if text == "all" {
            self = .all
            return
        }
        guard let unit = text.last, let n = UInt32(text.dropLast()), n >= 1 else { return nil }
        switch unit {
        case "d" where n <= Self.maxDays: self = .days(n)
        case "m" where n <= Self.maxMessages: self = .lastMessages(n)
        default: return nil
        }
    }

    /// Why the bounds are broken, or nil.
    public var problem: String? {
        switch self {
        case .all: nil
        case .days(let n): (1...Self.maxDays).contains(n) ? nil : "retention in days must be 1...\(Self.maxDays)"
        case .lastMessages(let n): (1...Self.maxMessages).contains(n) ? nil : "retention in messages must be 1...\(Self.maxMessages)"
        }
    }
}

/// A room's policy as one op states it whole: the topic, the retention, and whether people who
/// join later are shown the messages written before they joined.
public struct RoomPolicy: Hashable, Sendable {
    /// The longest topic, in UTF-8 bytes.
    public static let maxTopicBytes = 256

    public var topic: String
    public var retention: Retention
    public var historyForNewJoiners: Bool

    public init(topic: String = "", retention: Retention = .all, historyForNewJoiners: Bool = true) {
        (self.topic, self.retention, self.historyForNewJoiners) = (topic, retention, historyForNewJoiners)
    }

    /// The policy of a room without a policy op.
    public static let `default` = RoomPolicy()

    /// Why a field breaks a limit, or nil. A topic is one line: no control characters (a
    /// terminal would act on them), at most `maxTopicBytes`.
    public var problem: String? {
        if topic.utf8.count > Self.maxTopicBytes { return "the topic is over \(Self.maxTopicBytes) bytes" }
        if topic.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) {
            return "the topic must be one line without control characters"
        }
        return retention.problem
    }

    /// `topic string16 ‖ retention kind u8 (0 all, 1 days, 2 messages) ‖ count u32 (0 for all) ‖
    /// history u8 (0 or 1)`.
    func encode(to w: inout ByteWriter) {
        w.string16(topic)
        switch retention {
        case .all: w.u8(0); w.u32(0)
        case .days(let n): w.u8(1); w.u32(n)
        case .lastMessages(let n): w.u8(2); w.u32(n)
        }
        w.u8(historyForNewJoiners ? 1 : 0)
    }

    init(reading r: inout ByteReader) throws(WireDecodingError) {
        topic = try r.string16("topic", limit: Self.maxTopicBytes)
        let kind = try r.u8("retention kind")
        let count = try r.u32("retention count")
        switch kind {
        case 0 where count == 0: retention = .all
        case 1: retention = .days(count)
        case 2: retention = .lastMessages(count)
        default: throw .invalidValue(field: "retention")
        }
        let history = try r.u8("history for new joiners")
        guard history <= 1 else { throw .invalidValue(field: "history for new joiners") }
        historyForNewJoiners = history == 1
    }
}

/// A room's policy from its policy ops: a function of the set of ops, whatever order they came in.
///
/// The room's *owner* is the author of the first policy op in `(hlc, author, seq)` order; only
/// the owner's policy ops count, and the last of them by seq is the policy. A room's id follows
/// from its name, so nothing else can name a creator. This cannot stop someone from writing the
/// first policy op of a room that has none yet (with any stamp, backdated too): whoever's op
/// sorts first owns the room, on every replica alike.
public enum RoomPolicyState {
    /// One policy op, reduced to what the rule needs.
    public struct Event: Hashable, Sendable {
        public var author: UserID
        public var hlc: HLC
        public var seq: UInt64
        public var policy: RoomPolicy
        public init(author: UserID, hlc: HLC, seq: UInt64, policy: RoomPolicy) {
            (self.author, self.hlc, self.seq, self.policy) = (author, hlc, seq, policy)
        }
    }

    /// The owner and the policy in force; nil when there is no policy op.
    public static func resolve(_ events: [Event]) -> (owner: UserID, policy: RoomPolicy, ownerSince: HLC)? {
        guard let first = events.min(by: { ClockKey(hlc: $0.hlc, author: $0.author, seq: $0.seq) < ClockKey(hlc: $1.hlc, author: $1.author, seq: $1.seq) })
        else { return nil }
        let latest = events.filter { $0.author == first.author }.max { $0.seq < $1.seq } ?? first
        return (first.author, latest.policy, first.hlc)
    }
}
