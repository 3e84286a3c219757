import Identity
import Replica
import SQLite
import Sodium
import Wire

/// An identity whose secret key this store may use: to open key grants and invites addressed to
/// it, and to sign what it authors.
struct LocalIdentity {
    let identity: Identity
    let boxKeyPair: KeyExchange.KeyPair
}

/// Keys and epochs (docs/DESIGN.md §3.5): the local identities whose secret keys open grants,
/// the epoch keys opened from grants (`epoch_keys`, and the `grants` view's rows of them), and
/// conversations' resolved membership, which decides who may write and with which key.
///
/// Owns the in-memory identities and two caches: epoch keys by partition and membership by
/// partition, each dropped whenever what it was read from may change (a grant opened, a
/// membership resolved again, a rebuild, a rollback). The rows it reads of `members` and
/// `grants` are written by the views (`Views`), which tell it through `noteMembership` and
/// `noteGrant`. Not thread-safe: its store's one owner uses it.
public final class KeyRing {
    let database: Database
    let log: OpLog
    /// The identities whose secret keys this store may use to open grants and invites.
    var localIdentities: [UserID: LocalIdentity] = [:]
    /// Epoch keys opened so far, by partition row id (loaded from `epoch_keys` on first use).
    var epochKeyCache: [Int64: [EpochKey]] = [:]
    /// Conversations' resolved membership, by partition row id (dropped whenever it is resolved again).
    var membershipCache: [Int64: Membership.State] = [:]

    init(database: Database, log: OpLog) {
        self.database = database
        self.log = log
    }

    /// Empties the caches of rows and what was read from them (after a rollback, or another
    /// process's write). The identities stay.
    func forgetCachedRows() {
        epochKeyCache.removeAll()
        membershipCache.removeAll()
    }

    /// Keeps `local`'s keys.
    func addLocalIdentity(_ local: LocalIdentity) {
        localIdentities[local.identity.id] = local
    }

    /// The user ids of the local identities.
    var localUsers: Dictionary<UserID, LocalIdentity>.Keys { localIdentities.keys }

    /// Drops a partition's cached keys (a grant to a local identity was stored or opened).
    func forgetEpochKeys(pid: Int64) { epochKeyCache[pid] = nil }

    /// Drops a partition's cached keys and membership (its views are being rebuilt).
    func forgetPartition(pid: Int64) {
        epochKeyCache[pid] = nil
        membershipCache[pid] = nil
    }

    /// Records a conversation's membership as just resolved into the `members` view.
    func noteMembership(_ state: Membership.State, pid: Int64) { membershipCache[pid] = state }
}

/// Epoch keys (docs/DESIGN.md §3.5): opening grants addressed to local identities, keeping the keys,
/// opening encrypted bodies, and the plan for the key to write with (`EpochPlan`; the store's
/// `prepareWriteKey` carries it out).
extension KeyRing {
    /// The local identity with this user id, if the store was given it.
    func localIdentity(_ user: UserID) -> LocalIdentity? { localIdentities[user] }

    /// User ids packed as 32-byte keys one after another (the `recipients` column).
    static func unpack(_ packed: [UInt8]) -> [UserID] {
        stride(from: 0, to: packed.count - 31, by: 32).compactMap { UserID(publicKey: packed[$0..<$0 + 32]) }
    }

    /// Records a grant in the `grants` view and opens the boxes addressed to local identities.
    /// Returns true when it makes a key usable that was not (new, or its earlier grant was
    /// excluded by a fork): the partition's views must then be rebuilt at the end of the
    /// transaction.
    func noteGrant(_ grant: KeyGrant, oid: Int64, record: PartitionRecord, aid: Int64, rebuilding: Bool) throws -> Bool {
        let forMe = grant.recipients.contains { localIdentities[$0] != nil }
        let wasUsable = try epochKeys(pid: record.pid).contains { $0.id == grant.keyID }
        var recipients: [UInt8] = []
        for user in grant.recipients { recipients += user.publicKey }
        try database.cachedStatement("INSERT INTO grants(oid, pid, aid, epoch, key_id, recipients, for_me) VALUES (?, ?, ?, ?, ?, ?, ?)")
            .run(
                .integer(oid), .integer(record.pid), .integer(aid), .integer(Int64(grant.epoch)), .blob(grant.keyID.bytes), .blob(recipients),
                .integer(forMe ? 1 : 0))
        guard forMe else { return false }
        epochKeyCache[record.pid] = nil
        try learnKeys(from: grant, record: record)
        return try !rebuilding && !wasUsable && epochKeys(pid: record.pid).contains(where: { $0.id == grant.keyID })
    }

    /// Opens the boxes of `grant` addressed to local identities and keeps keys not seen before.
    func learnKeys(from grant: KeyGrant, record: PartitionRecord, only: LocalIdentity? = nil) throws {
        let candidates = only.map { [$0] } ?? Array(localIdentities.values)
        for local in candidates where grant.recipients.contains(local.identity.id) {
            let known: Int =
                try database.scalar(
                    "SELECT count(*) FROM epoch_keys WHERE pid = ? AND key_id = ?", .integer(record.pid), .blob(grant.keyID.bytes)) ?? 0
            guard known == 0, let key = grant.open(for: local.identity.id, keyPair: local.boxKeyPair, partition: record.id) else { continue }
            try database.cachedStatement("INSERT OR IGNORE INTO epoch_keys(pid, key_id, epoch, key) VALUES (?, ?, ?, ?)")
                .run(.integer(record.pid), .blob(key.id.bytes), .integer(Int64(key.epoch)), .blob(key.key.bytes))
            epochKeyCache[record.pid] = nil
        }
    }

    /// The epoch keys this node may use for a partition: those it opened whose grant to a local
    /// identity is still stored. A function of the op set and the local identities, so two
    /// members with the same ops and identity use the same keys, whatever they saw before.
    func epochKeys(pid: Int64) throws -> [EpochKey] {
        if let cached = epochKeyCache[pid] { return cached }
        guard let descriptor = try log.descriptor(pid: pid) else { return [] }
        if case .privateRoom = descriptor {
            // A private room's one key is its content key, derived from its passphrase when it
            // was joined (or learned from its successor): no grants.
            let keys = try database.cachedStatement("SELECT content_key FROM private_rooms WHERE pid = ?").rows(.integer(pid)) {
                EpochKey(partition: descriptor.id, epoch: 0, key: SecureBytes($0.blob(0)))
            }.compactMap { $0 }
            epochKeyCache[pid] = keys
            return keys
        }
        let keys = try database.cachedStatement(
            """
            SELECT k.epoch, k.key FROM epoch_keys k
            WHERE k.pid = ? AND k.key_id IN (SELECT key_id FROM grants WHERE pid = ? AND for_me = 1) ORDER BY k.key_id
            """
        ).rows(.integer(pid), .integer(pid)) { row in
            EpochKey(partition: descriptor.id, epoch: UInt32(truncatingIfNeeded: row.int64(0)), key: SecureBytes(row.blob(1)))
        }.compactMap { $0 }
        epochKeyCache[pid] = keys
        return keys
    }

    /// The epochs of the keys this node holds for a conversation, ascending (one entry per
    /// key: concurrent rotations can give one epoch two keys).
    public func heldEpochs(_ partition: PartitionID) throws -> [UInt32] {
        guard let record = try log.partition(partition) else { return [] }
        return try epochKeys(pid: record.pid).map(\.epoch).sorted()
    }

    /// The plaintext body of an encrypted op, if a key held for its epoch opens it and what it
    /// holds decodes as a body of the op's type.
    func openBody(_ op: Operation, _ sealed: EncryptedBody, pid: Int64) throws -> OperationBody? {
        for key in try epochKeys(pid: pid) where key.epoch == sealed.epoch {
            guard let plain = sealed.open(with: key, type: op.type, author: op.author) else { continue }
            return try? OperationBody(type: op.type, decoding: plain)
        }
        return nil
    }

    // MARK: Membership and the key plan

    /// A conversation's membership as last resolved (from the `members` view).
    func membershipState(pid: Int64) throws -> Membership.State {
        if let cached = membershipCache[pid] { return cached }
        var state = Membership.State()
        try database.cachedStatement("SELECT user, current, removed_at FROM members WHERE pid = ?").forEachRow([.integer(pid)]) { row in
            let user = UserID(publicKey: row.blob(0))!
            state.everMember.insert(user)
            if row.int(1) != 0 { state.current.insert(user) }
            if !row.isNull(2) { state.removedAt[user] = HLC(raw: UInt64(bitPattern: row.int64(2))) }
        }
        membershipCache[pid] = state
        return state
    }

    /// The epoch writers must use now: one per remove or leave op held, and one per revoked
    /// device of anyone who was ever a member (see `EpochPlan`; docs/DESIGN.md §3.8): both
    /// counts only grow as ops arrive.
    public func requiredEpoch(_ partition: PartitionID, devices: Devices) throws -> UInt32 {
        guard let record = try log.partition(partition) else { return 0 }
        return try requiredEpoch(pid: record.pid, devices: devices)
    }

    func requiredEpoch(pid: Int64, devices: Devices) throws -> UInt32 {
        let count: Int =
            try database.scalar(
                "SELECT count(*) FROM membership_events e JOIN ops o ON o.oid = e.oid WHERE e.pid = ? AND o.type IN (?, ?)",
                .integer(pid), .integer(Int64(OperationType.memberRemove.rawValue)), .integer(Int64(OperationType.memberLeave.rawValue))) ?? 0
        let revoked = try devices.revokedDevices()
        var lost = 0
        if !revoked.isEmpty {
            let everMembers = try membershipState(pid: pid).everMember
            for device in revoked {
                guard let person = try log.authorKey(devices.personAID(of: device)), everMembers.contains(person) else { continue }
                lost += 1
            }
        }
        return EpochPlan.requiredEpoch(removalsAndLeaves: count + lost)
    }

    /// What `member` (a person) must do before writing in the conversation (see `EpochPlan`):
    /// grants count for their authors' persons, and keys go to every device in good standing of
    /// every current member.
    func epochPlan(for member: UserID, record: PartitionRecord, devices: Devices) throws -> EpochPlan {
        let membership = try membershipState(pid: record.pid)
        var devicesOf: [UserID: [UserID]] = [:]
        for person in membership.current { devicesOf[person] = try devices.deviceKeys(of: person) }
        let grants = try database.cachedStatement(
            """
            SELECT coalesce(pa.key, a.key), g.epoch, g.key_id, g.recipients FROM grants g JOIN authors a ON a.aid = g.aid
            LEFT JOIN devices d ON d.device_aid = g.aid LEFT JOIN authors pa ON pa.aid = d.person_aid WHERE g.pid = ?
            """
        )
        .rows(.integer(record.pid)) { row -> EpochPlan.Grant in
            let recipients = Self.unpack(row.blob(3))
            return EpochPlan.Grant(
                author: UserID(publicKey: row.blob(0))!, epoch: UInt32(truncatingIfNeeded: row.int64(1)),
                keyID: Bytes32(row.blob(2)) ?? .zero, recipients: Set(recipients))
        }
        var held: [Bytes32: UInt32] = [:]
        for key in try epochKeys(pid: record.pid) { held[key.id] = key.epoch }
        return EpochPlan.plan(
            for: member, membership: membership, requiredEpoch: try requiredEpoch(pid: record.pid, devices: devices), grants: grants,
            heldKeys: held, devices: devicesOf)
    }

    func isEverMember(_ user: UserID, pid: Int64) throws -> Bool {
        let statement = try database.cachedStatement("SELECT 1 FROM members WHERE pid = ? AND user = ?")
        return try statement.firstRow(.integer(pid), .blob(user.publicKey)) { _ in true } ?? false
    }
}

extension UserID {
    /// Whether the id is a valid Ed25519 point, so sealed boxes can be addressed to it.
    public var canReceiveSealedBoxes: Bool { (try? Signing.curve25519PublicKey(fromEd25519: publicKey)) != nil }
}
