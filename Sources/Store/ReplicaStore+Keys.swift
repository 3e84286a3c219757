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

/// Epoch keys (docs/DESIGN.md §3.5): opening grants addressed to local identities, keeping the keys,
/// opening encrypted bodies, and choosing (or making) the key to write with.
extension ReplicaStore {
    /// Gives the store `identity`'s keys: grants addressed to it are opened now and whenever
    /// they arrive later, so the conversations it belongs to become readable (views are rebuilt
    /// where a new key opens ops already stored). Idempotent; `author(_:in:by:nowMillis:)`
    /// calls it for its author. A store that was never given an identity is a pure carrier.
    public func useIdentity(_ identity: Identity) throws {
        guard localIdentities[identity.id] == nil else { return }
        let local = LocalIdentity(identity: identity, boxKeyPair: identity.boxKeyPair)
        localIdentities[identity.id] = local
        try catchUpClock(withOwnOpsOf: identity.id)
        guard !isReadOnly else { return }
        // Read first: most calls find nothing to open and need no write transaction.
        let rows = try database.prepare("SELECT g.oid, g.pid, g.recipients, o.body FROM grants g JOIN ops o ON o.oid = g.oid WHERE g.for_me = 0")
            .rows { ($0.int64(0), $0.int64(1), $0.blob(2), $0.blob(3)) }
            .filter { Self.unpack($0.2).contains(identity.id) }
        guard !rows.isEmpty else { return }
        try database.transaction(.immediate) {
            for (oid, pid, _, body) in rows {
                try database.cachedStatement("UPDATE grants SET for_me = 1 WHERE oid = ?").run(.integer(oid))
                epochKeyCache[pid] = nil
                pendingRebuilds.insert(pid)
                guard let descriptor = try descriptor(pid: pid), let record = try partition(descriptor.id),
                    case .keyGrant(let grant) = try? OperationBody(type: OperationType.keyGrant.rawValue, decoding: body)
                else { continue }
                try learnKeys(from: grant, record: record, only: local)
            }
            try flushPendingRebuilds()
        }
    }

    /// The local identity with this user id, if the store was given it.
    func localIdentity(_ user: UserID) -> LocalIdentity? { localIdentities[user] }

    /// User ids packed as 32-byte keys one after another (the `recipients` column).
    static func unpack(_ packed: [UInt8]) -> [UserID] {
        stride(from: 0, to: packed.count - 31, by: 32).compactMap { UserID(publicKey: packed[$0..<$0 + 32]) }
    }

    /// Records a grant in the `grants` view and opens the boxes addressed to local identities.
    /// When it makes a key usable that was not (new, or its earlier grant was excluded by a
    /// fork), the partition's views are rebuilt at the end of the transaction.
    func noteGrant(_ grant: KeyGrant, oid: Int64, record: PartitionRecord, aid: Int64, rebuilding: Bool) throws {
        let forMe = grant.recipients.contains { localIdentities[$0] != nil }
        let wasUsable = try epochKeys(pid: record.pid).contains { $0.id == grant.keyID }
        var recipients: [UInt8] = []
        for user in grant.recipients { recipients += user.publicKey }
        try database.cachedStatement("INSERT INTO grants(oid, pid, aid, epoch, key_id, recipients, for_me) VALUES (?, ?, ?, ?, ?, ?, ?)")
            .run(
                .integer(oid), .integer(record.pid), .integer(aid), .integer(Int64(grant.epoch)), .blob(grant.keyID.bytes), .blob(recipients),
                .integer(forMe ? 1 : 0))
        guard forMe else { return }
        epochKeyCache[record.pid] = nil
        try learnKeys(from: grant, record: record)
        if !rebuilding, !wasUsable, try epochKeys(pid: record.pid).contains(where: { $0.id == grant.keyID }) {
            pendingRebuilds.insert(record.pid)
        }
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
        guard let descriptor = try descriptor(pid: pid) else { return [] }
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
        guard let record = try self.partition(partition) else { return [] }
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

    // MARK: Choosing the key to write with

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

    /// The epoch writers must use now: one per remove or leave op held (see `EpochPlan`).
    public func requiredEpoch(_ partition: PartitionID) throws -> UInt32 {
        guard let record = try self.partition(partition) else { return 0 }
        return try requiredEpoch(pid: record.pid)
    }

    func requiredEpoch(pid: Int64) throws -> UInt32 {
        let count: Int =
            try database.scalar(
                "SELECT count(*) FROM membership_events e JOIN ops o ON o.oid = e.oid WHERE e.pid = ? AND o.type IN (?, ?)",
                .integer(pid), .integer(Int64(OperationType.memberRemove.rawValue)), .integer(Int64(OperationType.memberLeave.rawValue))) ?? 0
        return EpochPlan.requiredEpoch(removalsAndLeaves: count)
    }

    /// What `member` must do before writing in the conversation (see `EpochPlan`).
    func epochPlan(for member: UserID, record: PartitionRecord) throws -> EpochPlan {
        let grants = try database.cachedStatement("SELECT a.key, g.epoch, g.key_id, g.recipients FROM grants g JOIN authors a ON a.aid = g.aid WHERE g.pid = ?")
            .rows(.integer(record.pid)) { row -> EpochPlan.Grant in
                let recipients = Self.unpack(row.blob(3))
                return EpochPlan.Grant(
                    author: UserID(publicKey: row.blob(0))!, epoch: UInt32(truncatingIfNeeded: row.int64(1)),
                    keyID: Bytes32(row.blob(2)) ?? .zero, recipients: Set(recipients))
            }
        var held: [Bytes32: UInt32] = [:]
        for key in try epochKeys(pid: record.pid) { held[key.id] = key.epoch }
        return EpochPlan.plan(
            for: member, membership: try membershipState(pid: record.pid), requiredEpoch: try requiredEpoch(pid: record.pid), grants: grants,
            heldKeys: held)
    }

    /// The key `local` must write with in the conversation, after authoring the rotation or the
    /// shares its plan calls for. Throws `StoreError.notMember` unless it is a current member.
    /// Must run inside a transaction.
    func prepareWriteKey(_ record: PartitionRecord, by local: LocalIdentity, nowMillis: UInt64) throws -> EpochKey {
        for _ in 0..<2 {
            switch try epochPlan(for: local.identity.id, record: record) {
            case .notMember:
                throw StoreError.notMember(record.id)
            case .rotate(let epoch, let recipients):
                let key = EpochKey.generate(partition: record.id, epoch: epoch)
                try authorGrant(key, to: recipients, record: record, by: local.identity, nowMillis: nowMillis)
            case .write(_, let keyID, let shareWith):
                guard let key = try epochKeys(pid: record.pid).first(where: { $0.id == keyID }) else { break }
                let reachable = shareWith.filter(\.canReceiveSealedBoxes)
                if !reachable.isEmpty { try authorGrant(key, to: reachable, record: record, by: local.identity, nowMillis: nowMillis) }
                return key
            }
        }
        throw StoreError.damaged("no epoch key to write with after a rotation")
    }

    /// Authors a grant of `key` to `members` (those with a valid key; at least the author).
    private func authorGrant(_ key: EpochKey, to members: [UserID], record: PartitionRecord, by identity: Identity, nowMillis: UInt64) throws {
        let grant = try KeyGrant(granting: key, to: members.filter(\.canReceiveSealedBoxes))
        guard !grant.boxes.isEmpty else { return }
        try signAndApply(.keyGrant, flags: [], body: OperationBody.keyGrant(grant).encoded, record: record, by: identity, nowMillis: nowMillis)
    }
}

extension UserID {
    /// Whether the id is a valid Ed25519 point, so sealed boxes can be addressed to it.
    public var canReceiveSealedBoxes: Bool { (try? Signing.curve25519PublicKey(fromEd25519: publicKey)) != nil }
}
