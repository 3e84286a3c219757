import Identity
import Replica
import SQLite

/// Whether someone is reachable now, as `people` shows it (docs/DESIGN.md §6.1).
public enum Presence: String, Sendable, CaseIterable {
    case online, away, offline
}

/// What a running node knows about a peer from its live links (docs/DESIGN.md §3.4: presence is
/// ephemeral, never an op). The store has no network: callers without a node pass nothing and
/// everyone else shows as offline; the node passes what its links tell it.
public struct PeerPresence: Hashable, Sendable {
    /// A link to one of the user's nodes is up (or presence frames arrived within their TTL).
    public var linked: Bool
    /// When the user was last seen on a link (Unix milliseconds), kept locally per peer.
    public var lastSeenMillis: UInt64?
    public init(linked: Bool, lastSeenMillis: UInt64? = nil) { (self.linked, self.lastSeenMillis) = (linked, lastSeenMillis) }
}

/// One person in the directory, as `people` lists them.
public struct PersonView: Hashable, Sendable {
    public var user: UserID
    public var nick: String?
    public var displayName: String?
    public var status: String?
    /// The mode they chose in their profile (nil: never set, which means online).
    public var presenceMode: PresenceMode?
    public var presence: Presence
    public var lastSeenMillis: UInt64?
    public var avatar: Attachment?
    public var isMe: Bool
    /// In how many partitions a key of theirs (their own or a device's) signed two different ops
    /// at one seq: their chains there are frozen (`Forks.chains()`); 0 when none.
    public var forks: Int = 0
}

/// The directory and presence (docs/DESIGN.md §3.4, §6.1): everyone's profile (the `profiles`
/// view of the directory partition) and when each peer was last seen on a link (`last_seen`,
/// local only). Holds no state of its own: every answer is read from the file.
public struct Directory {
    let database: Database
    /// A device's links and `me` on a device count for its person.
    let devices: Devices
}

extension Directory {
    /// Everyone in the directory (and `me`, even without an entry): `me` first, then by nick or
    /// display name, then id. `search` keeps those whose nick, display name or status contains
    /// it (case-insensitive) or whose id starts with it.
    ///
    /// Presence: `me` shows the chosen mode (hidden shows as offline, as others see it). Anyone
    /// else is offline unless `live` says a link is up; then away if they chose away, offline if
    /// they chose hidden, online otherwise. `live` is the seam for the node's link state.
    /// Last seen comes from `live` or, for someone not in it, from the local `last_seen` table
    /// (`noteLastSeen`), the later of the two; never for `me` or someone who chose hidden.
    ///
    /// One person, several devices: `me` may be a device (its person is listed), and a person is
    /// linked when any of their devices is, last seen when the latest of them was.
    public func people(me device: UserID, search: String? = nil, live byDevice: [UserID: PeerPresence] = [:]) throws -> [PersonView] {
        let me = try devices.person(of: device)
        let personOf = try devices.personByDeviceKey()
        var live: [UserID: PeerPresence] = [:]
        for (key, presence) in byDevice {
            let person = personOf[key] ?? key
            guard let seen = live[person] else {
                live[person] = presence
                continue
            }
            live[person] = PeerPresence(
                linked: seen.linked || presence.linked,
                lastSeenMillis: [seen.lastSeenMillis, presence.lastSeenMillis].compactMap { $0 }.max())
        }
        var profiles = try profiles()
        if !profiles.contains(where: { $0.user == me }) {
            profiles.append(ProfileView(user: me, nick: nil, displayName: nil, status: nil, presence: nil, avatar: nil))
        }
        let forks = try forkedPartitions(personOf: personOf)
        var stored: [UserID: UInt64] = [:]
        for (key, at) in try lastSeen() { stored[personOf[key] ?? key] = max(stored[personOf[key] ?? key] ?? 0, at) }
        func shown(_ mode: PresenceMode?) -> Presence {
            switch mode {
            case .away: .away
            case .hidden: .offline
            case .online, nil: .online
            }
        }
        var people = profiles.map { profile -> PersonView in
            let isMe = profile.user == me
            let link = live[profile.user] ?? stored[profile.user].map { PeerPresence(linked: false, lastSeenMillis: $0) }
            let presence: Presence = isMe ? shown(profile.presence) : (link?.linked == true ? shown(profile.presence) : .offline)
            return PersonView(
                user: profile.user, nick: profile.nick.flatMap { $0.isEmpty ? nil : $0 }, displayName: profile.displayName.flatMap { $0.isEmpty ? nil : $0 },
                status: profile.status.flatMap { $0.isEmpty ? nil : $0 }, presenceMode: profile.presence, presence: presence,
                lastSeenMillis: isMe || profile.presence == .hidden ? nil : link?.lastSeenMillis.map { max($0, stored[profile.user] ?? 0) },
                avatar: profile.avatar, isMe: isMe, forks: forks[profile.user]?.count ?? 0)
        }
        if let search = search?.lowercased(), !search.isEmpty {
            people = people.filter { person in
                [person.nick, person.displayName, person.status].contains { $0?.lowercased().contains(search) == true }
                    || person.user.text.hasPrefix(search)
            }
        }
        return people.sorted { a, b in
            if a.isMe != b.isMe { return a.isMe }
            let nameA = (a.nick ?? a.displayName ?? "").lowercased(), nameB = (b.nick ?? b.displayName ?? "").lowercased()
            if nameA != nameB { return nameB.isEmpty || (!nameA.isEmpty && nameA < nameB) }
            return a.user < b.user
        }
    }
}

extension Directory {
    /// The partitions in which each person's keys forked (a person with two forked devices in
    /// one partition counts it once).
    private func forkedPartitions(personOf: [UserID: UserID]) throws -> [UserID: Set<Int64>] {
        var forked: [UserID: Set<Int64>] = [:]
        let rows = try database.cachedStatement("SELECT f.pid, a.key FROM fork_proofs f JOIN authors a ON a.aid = f.aid").rows {
            ($0.int64(0), UserID(publicKey: $0.blob(1)))
        }
        for case (let pid, let key?) in rows { forked[personOf[key] ?? key, default: []].insert(pid) }
        return forked
    }
}

// MARK: - Last seen

extension Directory {
    /// Records that `user` was seen on a link at `millis` (Unix milliseconds); keeps the latest.
    public func noteLastSeen(_ user: UserID, atMillis millis: UInt64) throws {
        try database.cachedStatement(
            "INSERT INTO last_seen(user, at) VALUES (?, ?) ON CONFLICT(user) DO UPDATE SET at = max(at, excluded.at)"
        ).run(.blob(user.bytes), .integer(Int64(clamping: millis)))
    }

    /// When each peer was last seen on a link, as recorded by `noteLastSeen`.
    public func lastSeen() throws -> [UserID: UInt64] {
        let rows = try database.cachedStatement("SELECT user, at FROM last_seen").rows { (UserID(publicKey: $0.blob(0)), UInt64($0.int64(1))) }
        return Dictionary(rows.compactMap { user, at in user.map { ($0, at) } }, uniquingKeysWith: max)
    }

    /// All directory entries, by user id.
    public func profiles() throws -> [ProfileView] {
        try database.prepare(
            """
            SELECT a.key, p.nick, p.display_name, p.status, p.presence, p.avatar FROM profiles p JOIN authors a ON a.aid = p.aid ORDER BY a.key
            """
        ).rows { row in
            ProfileView(
                user: UserID(publicKey: row.blob(0))!, nick: row.isNull(1) ? nil : row.text(1), displayName: row.isNull(2) ? nil : row.text(2),
                status: row.isNull(3) ? nil : row.text(3), presence: row.isNull(4) ? nil : PresenceMode(rawValue: UInt8(row.int(4))),
                avatar: row.isNull(5) ? nil : decodeAttachments(row.blob(5)).first)
        }
    }

    /// One user's directory entry.
    public func profile(_ user: UserID) throws -> ProfileView? {
        try profiles().first { $0.user == user }
    }
}
