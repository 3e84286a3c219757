import Identity
import Replica
import SQLite
import Sodium
import Wire

/// A private room as this node holds it: its partition and the name it was joined under (kept
/// in the local `private_rooms` table only; the name never travels).
public struct PrivateRoomRecord: Hashable, Sendable {
    public var id: PartitionID
    public var name: RoomName
    /// Whether this node may write there (it derived the room key from the passphrase); false
    /// for an earlier epoch learned from its successor, which it only reads.
    public var writable: Bool
    /// The epoch that replaced this one (a passphrase change), if known.
    public var successor: PartitionID?
}

/// Private rooms (docs/DESIGN.md §3.7): joining with keys derived from the name and the
/// passphrase, finding a joined one by its name, and writing into it.
extension ReplicaStore {
    /// Joins the private room `roomKeys` derive (creating it: nobody needs to have written there
    /// yet) and keeps its name and keys locally. Ops of the room this node carried before are
    /// read from now on (its views are rebuilt). Idempotent.
    @discardableResult
    public func joinPrivateRoom(_ roomKeys: PrivateRoomKeys) throws -> PartitionRecord {
        try database.transaction(.immediate, durable: true) {
            let record = try log.ensurePartition(roomKeys.descriptor, joined: true)
            try database.execute(
                """
                INSERT INTO private_rooms(pid, name, room_seed, content_key) VALUES (?, ?, ?, ?)
                ON CONFLICT(pid) DO UPDATE SET name = excluded.name, room_seed = excluded.room_seed, content_key = excluded.content_key
                """, .integer(record.pid), .text(roomKeys.name.value), .blob(roomKeys.roomKey.seed.bytes), .blob(roomKeys.contentKey.bytes))
            keys.forgetEpochKeys(pid: record.pid)
            carrier.forgetStoredBytes(pid: record.pid)
            views.rebuildAtEnd(pid: record.pid)
            try views.flushPendingRebuilds()
            return record
        }
    }

    /// A joined room as `rooms` lists it (the command and the API): public, or private by the
    /// name it was joined under (its newest epoch this node writes, where `read` marks), with
    /// its unread count and, for a public room, its policy.
    public struct JoinedRoom: Sendable {
        public var name: RoomName
        public var id: PartitionID
        public var unread: Int
        public var isPrivate: Bool
        public var policy: RoomPolicyView?
        /// Muted by the reader (`Views.isMuted`).
        public var muted: Bool
    }

    /// Every joined room, by name (a public room before a private one of the same name).
    public func joinedRooms(reader: UserID) throws -> [JoinedRoom] {
        let publicRooms = try log.partitions().compactMap { record -> JoinedRoom? in
            guard record.joined, case .room(let name) = record.descriptor else { return nil }
            return JoinedRoom(
                name: name, id: record.id, unread: try views.unreadCount(record.id, reader: reader), isPrivate: false,
                policy: try views.roomPolicy(record.id), muted: try views.isMuted(record.id, owner: reader))
        }
        let privateRooms = try privateRooms().filter { $0.writable && $0.successor == nil }.map { room in
            JoinedRoom(
                name: room.name, id: room.id, unread: try views.unreadCount(room.id, reader: reader), isPrivate: true, policy: nil,
                muted: try views.isMuted(room.id, owner: reader))
        }
        return (publicRooms + privateRooms).sorted { ($0.name.value, $0.isPrivate ? 1 : 0) < ($1.name.value, $1.isPrivate ? 1 : 0) }
    }

    /// The joined private rooms, the most recently joined first.
    public func privateRooms() throws -> [PrivateRoomRecord] {
        let rows = try database.prepare(
            """
            SELECT p.id, r.name, r.room_seed IS NOT NULL, s.id FROM private_rooms r JOIN partitions p ON p.pid = r.pid
            LEFT JOIN partitions s ON s.pid = r.successor WHERE p.joined = 1 ORDER BY r.pid DESC
            """
        ).rows { row in
            (PartitionID(bytes: row.blob(0)), RoomName(row.text(1)), row.int(2) != 0, row.isNull(3) ? nil : PartitionID(bytes: row.blob(3)))
        }
        return rows.compactMap { id, name, writable, successor in
            guard let id, let name else { return nil }
            return PrivateRoomRecord(id: id, name: name, writable: writable, successor: successor ?? nil)
        }
    }

    /// The keys of every joined private room epoch this node holds the passphrase of, oldest
    /// first: what a newly paired device of the person joins (docs/DESIGN.md §3.8).
    public func privateRoomKeys() throws -> [PrivateRoomKeys] {
        try database.prepare(
            """
            SELECT r.name, r.room_seed, r.content_key FROM private_rooms r JOIN partitions p ON p.pid = r.pid
            WHERE p.joined = 1 AND r.room_seed IS NOT NULL ORDER BY r.pid
            """
        ).rows { row in (row.text(0), row.blob(1), row.blob(2)) }
            .compactMap { name, seed, contentKey in RoomName(name).map { PrivateRoomKeys(name: $0, seed: seed, contentKey: contentKey) } }
    }

    /// The joined private room called `name` that a message goes to: the newest epoch (no
    /// successor) this node can write, most recently joined first. Nil when none is joined.
    public func privateRoom(named name: RoomName) throws -> PrivateRoomRecord? {
        try privateRooms().first { $0.name == name && $0.writable && $0.successor == nil }
    }

    /// The epochs of a private room up to `partition`, oldest first (`Views.privateRoomChain`).
    public func privateRoomChain(_ partition: PartitionID) throws -> [PartitionID] { try views.privateRoomChain(partition) }

    /// The name this node joined a private room under, if it holds the room.
    public func privateRoomName(_ partition: PartitionID) throws -> RoomName? {
        guard let record = try log.partition(partition), record.descriptor.kind == .privateRoom else { return nil }
        let text = try database.scalar("SELECT name FROM private_rooms WHERE pid = ?", .integer(record.pid), as: String.self)
        return text.flatMap(RoomName.init)
    }

    /// Changes a private room's passphrase: joins the room `newKeys` derive (same name, new
    /// passphrase) as its next epoch, writes there a link to the current epoch with its content
    /// key (so holders of the new passphrase read the earlier history; without it when
    /// `keepHistory` is false, so those who join with the new passphrase only read from here
    /// on), and writes into the current epoch a notice that the passphrase changed. Holders of
    /// the old passphrase only cannot open anything written in the new epoch. Returns the new epoch.
    @discardableResult
    public func changePrivateRoomPassphrase(
        _ partition: PartitionID, to newKeys: PrivateRoomKeys, keepHistory: Bool = true, by identity: Identity, nowMillis: UInt64
    ) throws
        -> PartitionRecord
    {
        try useIdentity(identity)
        return try database.transaction(.immediate, durable: true) {
            guard let current = try log.partition(partition) else { throw StoreError.unknownPartition(partition) }
            let oldKeys = try privateRoomWriteKeys(current)
            guard newKeys.name == oldKeys.name else { throw StoreError.invalidInput("the new epoch must keep the room's name \(oldKeys.name)") }
            guard newKeys.descriptor.id != current.id else {
                throw StoreError.invalidInput("the new passphrase is the room's current one; choose another")
            }
            let next = try joinPrivateRoom(newKeys)
            try authorInPrivateRoom(
                .roomLink(
                    predecessor: Bytes32(oldKeys.roomKey.publicKey)!,
                    contentKey: keepHistory ? Bytes32(oldKeys.contentKey.bytes)! : OperationBody.withheldKey), record: next,
                by: identity, nowMillis: nowMillis)
            try authorInPrivateRoom(.roomNotice, record: current, by: identity, nowMillis: nowMillis)
            try views.flushPendingRebuilds()
            return next
        }
    }

    /// The keys to write into a private room with; throws unless this node joined it with its
    /// passphrase.
    func privateRoomWriteKeys(_ record: PartitionRecord) throws -> PrivateRoomKeys {
        let row = try database.cachedStatement("SELECT name, room_seed, content_key FROM private_rooms WHERE pid = ? AND room_seed IS NOT NULL")
            .firstRow(.integer(record.pid)) { ($0.text(0), $0.blob(1), $0.blob(2)) }
        guard let row, let name = RoomName(row.0) else {
            throw StoreError.invalidInput("this node does not hold the passphrase of private room \(record.id.text.prefix(12)); join it first")
        }
        return PrivateRoomKeys(name: name, seed: row.1, contentKey: row.2)
    }

    /// Authors `body` in a private room: encrypted with the content key, signed by the room key
    /// as well as the author. Must run inside a transaction.
    @discardableResult
    func authorInPrivateRoom(_ body: OperationBody, record: PartitionRecord, by identity: Identity, nowMillis: UInt64) throws -> Operation {
        let roomKeys = try privateRoomWriteKeys(record)
        let sealed = try EncryptedBody.seal(body.encoded, with: roomKeys.epochKey, type: body.type, author: identity.id)
        return try signAndApply(body.type, flags: .bodyEncrypted, body: sealed, record: record, by: identity, nowMillis: nowMillis, roomKeys: roomKeys)
    }
}
