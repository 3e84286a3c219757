import Identity
import Replica
import SQLite

/// A person's profile, merged over their devices (docs/DESIGN.md §3.4, §3.8).
extension Views {
    /// Rewrites the person's row of `profiles` from the profile ops of the person's key and of
    /// their certified devices, folded field by field in `(hlc, author, seq)` order: each field is
    /// the last one set, whichever device set it. For one key this is its chain's order, as before.
    func resolveProfile(of person: Int64, pid: Int64) throws {
        guard let personKey = try log.authorKey(person) else { return }
        var authors = [person]
        authors += try database.cachedStatement("SELECT device_aid FROM devices WHERE person_aid = ?").rows(.integer(person)) { $0.int64(0) }
        let read = try database.cachedStatement("SELECT header, body, erasure FROM ops WHERE pid = ? AND aid = ? AND type = ?")
        var ops: [Operation] = []
        for author in authors {
            ops += try read.rows(.integer(pid), .integer(author), .integer(Int64(OperationType.profile.rawValue))) { try OpLog.storedOperation($0, from: 0) }
        }
        var nick: String?, displayName: String?, status: String?, presence: PresenceMode?, avatar: Attachment?
        var any = false
        for op in ops.sorted(by: { ClockKey($0) < ClockKey($1) }) {
            guard
                case .profile(let subject, let newNick, let newDisplayName, let newStatus, let newPresence, let newAvatar)? =
                    try? OperationBody(type: op.type, decoding: op.body), subject == personKey
            else { continue }
            any = true
            nick = newNick ?? nick
            displayName = newDisplayName ?? displayName
            status = newStatus ?? status
            presence = newPresence ?? presence
            avatar = newAvatar ?? avatar
        }
        guard any else {
            try database.cachedStatement("DELETE FROM profiles WHERE aid = ?").run(.integer(person))
            return
        }
        try database.cachedStatement(
            "INSERT OR REPLACE INTO profiles(aid, nick, display_name, status, presence, avatar) VALUES (?, ?, ?, ?, ?, ?)"
        ).run(
            .integer(person), nick.map { .text($0) } ?? .null, displayName.map { .text($0) } ?? .null, status.map { .text($0) } ?? .null,
            presence.map { .integer(Int64($0.rawValue)) } ?? .null, avatar.map { .blob(encodeAttachments([$0])) } ?? .null)
    }

    /// After the directory is replayed: every person's profile once more, now that every
    /// certificate is known (a device's profile ops may come before its certificate in the replay).
    func resolveAllProfiles(pid: Int64) throws {
        let people = try database.cachedStatement("SELECT DISTINCT aid FROM ops WHERE pid = ? AND type = ?")
            .rows(.integer(pid), .integer(Int64(OperationType.profile.rawValue))) { $0.int64(0) }
        var persons = Set<Int64>()
        for aid in people { persons.insert(try devices.personAID(of: aid)) }
        for person in persons.sorted() { try resolveProfile(of: person, pid: pid) }
    }

    /// Every conversation's membership and views are settled again at the end of the
    /// transaction: a new certificate makes a device's membership ops count for its person.
    func rebuildConversationsAtEnd() throws {
        for record in try log.partitions() where record.descriptor.kind == .conversation { pendingRebuilds.insert(record.pid) }
    }
}
