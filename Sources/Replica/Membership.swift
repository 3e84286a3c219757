import Identity

/// Who belongs to a conversation, derived from its membership ops (docs/DESIGN.md §3.4).
///
/// The result is a function of the *set* of ops, whatever order they arrived in:
/// - *ever a member*: the creator, the members named at creation, and — to a fixed point —
///   everyone added by someone who is ever a member. This set only grows as ops arrive, so a
///   replica may refuse a non-member's op now and accept it once the add arrives, and every
///   replica ends in the same state. Carriers compute it too: membership ops are plaintext.
/// - *current member*: the creation, then every other membership op replayed in
///   `(hlc, adds before removes, author, seq)` order, each taking effect only if its author may
///   do it at that point: an add by a current member, a remove by the creator while current, a
///   leave by a current member. So a remove beats an add with the same HLC, and a removed member
///   can no longer add anyone (themselves included) with a later clock.
public enum Membership {
    /// One membership op, reduced to what the rules need.
    public struct Event: Hashable, Sendable {
        public enum Action: Hashable, Sendable {
            case create(members: [UserID])
            case add(UserID)
            case remove(UserID)
            case leave
        }
        public var author: UserID
        public var hlc: HLC
        public var action: Action
        /// The op's seq: the last tie-break of the replay order.
        public var seq: UInt64
        public init(author: UserID, hlc: HLC, action: Action, seq: UInt64 = 0) {
            (self.author, self.hlc, self.action, self.seq) = (author, hlc, action, seq)
        }

        /// Adds (and the create) sort before removes and leaves with the same HLC: remove wins.
        var rank: Int {
            switch action {
            case .create, .add: 0
            case .remove, .leave: 1
            }
        }
    }

    public struct State: Hashable, Sendable {
        public var everMember: Set<UserID> = []
        public var current: Set<UserID> = []
        /// For each ever-member who is not current: the HLC of the remove or leave that ended
        /// their membership (zero if an add of theirs never took effect). Their messages at or
        /// after it are not shown.
        public var removedAt: [UserID: HLC] = [:]
        public init() {}
    }

    /// Resolves the membership of a conversation created by `creator`.
    public static func resolve(creator: UserID, events: [Event]) -> State {
        var ever: Set<UserID> = []
        guard let create = events.first(where: { $0.author == creator && $0.isCreate }), case .create(let initial) = create.action else {
            return State()
        }
        ever.insert(creator)
        ever.formUnion(initial)
        // Adds by ever-members, to a fixed point (an add may be by someone added by another add).
        var changed = true
        while changed {
            changed = false
            for event in events {
                guard case .add(let user) = event.action, ever.contains(event.author) else { continue }
                if ever.insert(user).inserted { changed = true }
            }
        }

        var current: Set<UserID> = [creator]
        current.formUnion(initial)
        var removedAt: [UserID: HLC] = [:]
        let replay = events.filter { !$0.isCreate && ever.contains($0.author) }.sorted { a, b in
            if a.hlc != b.hlc { return a.hlc < b.hlc }
            if a.rank != b.rank { return a.rank < b.rank }
            if a.author != b.author { return a.author < b.author }
            return a.seq < b.seq
        }
        for event in replay where current.contains(event.author) {
            switch event.action {
            case .add(let user):
                current.insert(user)
                removedAt[user] = nil
            case .remove(let user) where event.author == creator:
                if current.remove(user) != nil { removedAt[user] = event.hlc }
            case .leave:
                current.remove(event.author)
                removedAt[event.author] = event.hlc
            default:
                break
            }
        }
        for user in ever.subtracting(current) where removedAt[user] == nil { removedAt[user] = HLC(raw: 0) }
        var state = State()
        state.everMember = ever
        state.current = current
        state.removedAt = removedAt
        return state
    }
}

extension Membership.Event {
    var isCreate: Bool {
        if case .create = action { return true }
        return false
    }
}
