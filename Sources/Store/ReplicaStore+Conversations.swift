import Identity
import Replica
import SQLite
import Sodium
import Wire

/// Private conversations (docs/DESIGN.md §3.5): creating them, writing membership changes with their
/// keys and invites, and learning about them from the inbox (`Views.conversations` lists them).
extension ReplicaStore {
    /// Creates a conversation named `name` with `members` (the creator is always one) and joins
    /// it; returns its descriptor. Its id is self-certifying: BLAKE2b over the creator's key and
    /// a random nonce. The name travels encrypted; each member gets an invite in their inbox.
    public func createConversation(name: String, members: [UserID], by identity: Identity, nowMillis: UInt64) throws -> PartitionDescriptor {
        let descriptor = PartitionDescriptor.conversation(creator: identity.id, nonce: Bytes32(Sodium.randomBytes(32))!)
        let others = Array(Set(members).subtracting([identity.id, try devices.person(of: identity.id)])).sorted()
        try database.transaction(.immediate, durable: true) {
            try log.ensurePartition(descriptor, joined: true)
            try author(.conversationCreate(name: name, members: others), in: descriptor.id, by: identity, nowMillis: nowMillis)
        }
        return descriptor
    }

    /// Authors `body` in a conversation with everything a member's write entails (see
    /// `author(_:in:by:nowMillis:)`). Must run inside a transaction.
    func authorInConversation(_ body: OperationBody, record: PartitionRecord, by local: LocalIdentity, nowMillis: UInt64) throws -> Operation {
        let identity = local.identity
        if body.type.isConversationContent {
            let key = try prepareWriteKey(record, by: local, nowMillis: nowMillis)
            let sealed = try EncryptedBody.seal(body.encoded, with: key, type: body.type, author: identity.id)
            return try signAndApply(body.type, flags: .bodyEncrypted, body: sealed, record: record, by: identity, nowMillis: nowMillis)
        }
        func plain(_ body: OperationBody) throws -> Operation {
            try signAndApply(body.type, flags: [], body: body.encoded, record: record, by: identity, nowMillis: nowMillis)
        }
        switch body {
        case .conversationCreate(let name, let members):
            try requireSealable(members)
            let op = try plain(.conversationCreate(name: "", members: members))
            _ = try prepareWriteKey(record, by: local, nowMillis: nowMillis)
            if !name.isEmpty { _ = try authorInConversation(.conversationRename(name: name), record: record, by: local, nowMillis: nowMillis) }
            try sendInvites(to: members, conversation: record.descriptor, by: identity, nowMillis: nowMillis)
            return op
        case .memberAdd(let user):
            try requireSealable([user])
            try requireCurrentMember(identity.id, record)
            let op = try plain(body)
            _ = try prepareWriteKey(record, by: local, nowMillis: nowMillis)  // shares the key with the new member
            try sendInvites(to: [user], conversation: record.descriptor, by: identity, nowMillis: nowMillis)
            return op
        case .memberRemove:
            try requireCurrentMember(identity.id, record)
            let op = try plain(body)
            _ = try prepareWriteKey(record, by: local, nowMillis: nowMillis)  // a new epoch without them
            return op
        case .memberLeave:
            try requireCurrentMember(identity.id, record)
            return try plain(body)
        default:
            return try plain(body)
        }
    }

    private func requireCurrentMember(_ user: UserID, _ record: PartitionRecord) throws {
        guard try keys.membershipState(pid: record.pid).current.contains(devices.person(of: user)) else { throw StoreError.notMember(record.id) }
    }

    private func requireSealable(_ users: [UserID]) throws {
        if let bad = users.first(where: { !$0.canReceiveSealedBoxes }) {
            throw StoreError.invalidInput("\(bad.text) is not a valid user id (not a public key)")
        }
    }

    /// Writes an invite to `conversation` into each user's inbox (carried for them from now on),
    /// one sealed to each of their devices in good standing (docs/DESIGN.md §3.8).
    func sendInvites(to users: [UserID], conversation: PartitionDescriptor, by identity: Identity, nowMillis: UInt64) throws {
        for user in Set(users).subtracting([identity.id]).sorted() {
            let inbox = try log.ensurePartition(.inbox(owner: user), joined: false)
            for device in try devices.deviceKeys(of: user) where device != identity.id && device.canReceiveSealedBoxes {
                try signAndApply(
                    .invite, flags: .bodyEncrypted, body: try Invite.seal(conversation, to: device), record: inbox, by: identity, nowMillis: nowMillis)
            }
        }
    }

    // MARK: The inbox

    /// Reads `me`'s inbox and joins each conversation an invite names, once per invite
    /// (idempotent). A conversation whose ops are already held is joined only while `me` is a
    /// current member, so an old invite never undoes a leave. Returns the newly joined
    /// conversations (for a node to start syncing them). Invites that do not open are skipped.
    @discardableResult
    public func processInbox(me identity: Identity) throws -> [PartitionDescriptor] {
        try useIdentity(identity)
        guard let local = keys.localIdentity(identity.id) else { return [] }
        let me = try devices.person(of: identity.id)
        let inboxID = PartitionDescriptor.inbox(owner: me).id
        // Read first: most calls find nothing new and need no write transaction.
        let processed = Set(try database.prepare("SELECT op_id FROM processed_invites").rows { OpID(bytes: $0.blob(0)) }.compactMap { $0 })
        let fresh = try log.allOps(in: inboxID).filter { !processed.contains($0.id) }
        let inboxKnown = try log.partition(inboxID)?.joined == true
        guard !fresh.isEmpty || !inboxKnown, !isReadOnly else { return [] }
        return try database.transaction(.immediate) {
            try log.ensurePartition(.inbox(owner: me), joined: true)
            var joined: [PartitionDescriptor] = []
            for op in fresh {
                try database.cachedStatement("INSERT OR IGNORE INTO processed_invites(op_id) VALUES (?)").run(.blob(op.id.bytes))
                guard let descriptor = Invite.open(op.body, with: local.boxKeyPair), descriptor.kind == .conversation else { continue }
                if let record = try log.partition(descriptor.id) {
                    guard !record.joined else { continue }
                    let membership = try keys.membershipState(pid: record.pid)
                    guard membership.everMember.isEmpty || membership.current.contains(me) else { continue }
                    try log.setJoined(descriptor.id, true)
                } else {
                    try log.ensurePartition(descriptor, joined: true)
                }
                joined.append(descriptor)
            }
            return joined
        }
    }
}
