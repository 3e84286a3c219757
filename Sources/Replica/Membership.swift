import Identity

/// Who belongs to a conversation, derived from its membership ops (DESIGN §3.4).
///
/// The result is a function of the *set* of ops, whatever order they arrived in:
/// - *ever a member*: the creator, the members named at creation, and — to a fixed point —
///   everyone added by someone who is ever a member. This set only grows as ops arrive, so a
///   replica may refuse a non-member's op now and accept it once the add arrives, and every
///   replica ends in the same state.
/// - *current member*: ever a member, and the latest add (or the creation) is later than the latest
///   remove by the creator or leave by the member, comparing HLCs; on a tie remove wins.
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
        public init(author: UserID, hlc: HLC, action: Action) {
            (self.author, self.hlc, self.action) = (author, hlc, action)
        }
    }

    public struct State: Hashable, Sendable {
        public var everMember: Set<UserID> = []
        public var current: Set<UserID> = []
        public init() {}
    }

    /// Resolves the membership of a conversation created by `creator`.
    public static func resolve(creator: UserID, events: [Event]) -> State {
        var ever: Set<UserID> = []
        var lastAdd: [UserID: HLC] = [:]
        var lastRemove: [UserID: HLC] = [:]
        func noteAdd(_ user: UserID, _ hlc: HLC) { lastAdd[user] = max(lastAdd[user] ?? hlc, hlc) }

        for event in events {
            if case .create(let members) = event.action, event.author == creator {
                ever.insert(creator)
                noteAdd(creator, event.hlc)
                for m in members { ever.insert(m); noteAdd(m, event.hlc) }
            }
        }
        // Adds by ever-members, to a fixed point (an add may be by someone added by another add).
        var changed = true
        while changed {
            changed = false
            for event in events {
                guard case .add(let user) = event.action, ever.contains(event.author) else { continue }
                if ever.insert(user).inserted { changed = true }
            }
        }
        for event in events where ever.contains(event.author) {
            switch event.action {
            case .add(let user): noteAdd(user, event.hlc)
            case .remove(let user) where event.author == creator: lastRemove[user] = max(lastRemove[user] ?? event.hlc, event.hlc)
            case .leave: lastRemove[event.author] = max(lastRemove[event.author] ?? event.hlc, event.hlc)
            default: break
            }
        }
        var state = State()
        state.everMember = ever
        for user in ever {
            guard let added = lastAdd[user] else { continue }
            if let removed = lastRemove[user], removed >= added { continue }
            state.current.insert(user)
        }
        return state
    }
}
