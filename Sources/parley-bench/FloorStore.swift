// What a floor node keeps of each message (`FloorCluster.swift`): the plain floor's one row, or
// the rows docs/DESIGN.md §5 asks of every replica of this design, in the same single-threaded
// structure.
import SQLite
import Sodium
import Store

/// The rows a floor node writes per message.
enum FloorRows: String {
    /// One row (the signed message) with its chain index: the floor of any replica that checks
    /// and keeps what it receives.
    case plain
    /// docs/DESIGN.md §5's rows, in one transaction per commit as there: the op (a header the size of
    /// Parley's, with the partition, the author's key, the HLC, the previous op's id and the
    /// body's hash) and its chain index, the author's head (read, checked against the op's seq
    /// and `prev`, written back), and the message's view row with its order index. Per op it
    /// also hashes the header (the op id) and the body (checked against the header's hash).
    /// Still none of Parley's structure: no handshake, no frames, no sessions, no control
    /// request, no event loop.
    case design
}

/// A received message, checked: its author's index, its seq, and the author's write stamp.
struct FloorMessage {
    let author: Int
    let seq: Int64
    let writtenMicros: UInt64
    let signed: [UInt8]
}

/// A floor node's store: the statements of its `FloorRows`, and the op layout each writes.
final class FloorStore {
    let rows: FloorRows
    private let database: Database
    private let keys: [Signing.KeyPair]
    private let me: Int
    private var hlc: UInt64 = 0

    /// The design's header: index 1, seq 8, written 8, HLC 8, partition 32, author key 32,
    /// prev 32, body hash 32 = 153 bytes, signed after it (Parley's: 152 and 64).
    private static let headerBytes = 153
    private static let partition = [UInt8](repeating: 0x50, count: 32)

    init(path: String, rows: FloorRows, keys: [Signing.KeyPair], me: Int) throws {
        (self.rows, self.keys, self.me) = (rows, keys, me)
        database = try Database(path: path)
        try database.checkpointInBackground(pages: 4_096, jitter: 0.5, backstopPages: 32_768)  // as ReplicaStore
        switch rows {
        case .plain:
            try database.execute(
                """
                CREATE TABLE ops(oid INTEGER PRIMARY KEY, author INTEGER NOT NULL, seq INTEGER NOT NULL,
                    body BLOB NOT NULL, received_at INTEGER NOT NULL) STRICT;
                CREATE UNIQUE INDEX ops_chain ON ops(author, seq);
                """)
        case .design:
            // Parley's own tables, with the columns a message op writes (Schema.swift).
            try database.execute(
                """
                CREATE TABLE ops(oid INTEGER PRIMARY KEY, pid INTEGER NOT NULL, aid INTEGER NOT NULL, seq INTEGER NOT NULL,
                    type INTEGER NOT NULL, hlc INTEGER NOT NULL, header BLOB NOT NULL, body BLOB NOT NULL,
                    received_at INTEGER NOT NULL) STRICT;
                CREATE UNIQUE INDEX ops_chain ON ops(pid, aid, seq);
                CREATE TABLE heads(pid INTEGER NOT NULL, aid INTEGER NOT NULL, max_seq INTEGER NOT NULL, head_id BLOB NOT NULL,
                    frozen_at INTEGER, PRIMARY KEY(pid, aid)) STRICT, WITHOUT ROWID;
                CREATE TABLE messages(oid INTEGER PRIMARY KEY, pid INTEGER NOT NULL, aid INTEGER NOT NULL, seq INTEGER NOT NULL,
                    hlc INTEGER NOT NULL, op_id BLOB NOT NULL, text TEXT NOT NULL, attachments BLOB, latitude REAL,
                    longitude REAL, reply_to BLOB, edited INTEGER NOT NULL DEFAULT 0, deleted INTEGER NOT NULL DEFAULT 0) STRICT;
                CREATE INDEX messages_in_order ON messages(pid, hlc);
                """)
        }
    }

    /// Writes this node's `seq`th message (`text`, stamped `writtenMicros`) in a transaction of
    /// its own and returns it signed, to send.
    func writeOwn(seq: Int64, writtenMicros: UInt64, text: String) throws -> [UInt8] {
        var content = [UInt8(me)]
        withUnsafeBytes(of: seq.littleEndian) { content += $0 }
        withUnsafeBytes(of: writtenMicros.littleEndian) { content += $0 }
        switch rows {
        case .plain:
            content += Array(text.utf8)
            let signed = content + keys[me].sign(content)
            try database.transaction { try storePlain(FloorMessage(author: me, seq: seq, writtenMicros: writtenMicros, signed: signed), at: writtenMicros) }
            return signed
        case .design:
            let body = Array(text.utf8)
            var signed: [UInt8] = []
            try database.transaction {
                let head = try self.head(of: me)
                hlc = max(hlc + 1, (writtenMicros / 1_000) << 16)
                withUnsafeBytes(of: hlc.littleEndian) { content += $0 }
                content += Self.partition + keys[me].publicKey + (head?.id ?? Self.noOp) + GenericHash.hash(body)
                let header = content + keys[me].sign(content)
                signed = header + body
                try store(FloorMessage(author: me, seq: seq, writtenMicros: writtenMicros, signed: signed), head: head, at: writtenMicros)
            }
            return signed
        }
    }

    /// `message` as received: well formed, from a floor node, its body the one its header
    /// hashes (design rows), and its signature valid if it is one in
    /// `maxLinkAuthenticatedTail + 1` of its author's (as a Parley node checks an author's own
    /// pushes).
    func check(_ message: [UInt8]) throws -> FloorMessage {
        let signedCount: Int
        switch rows {
        case .plain: signedCount = message.count - Signing.signatureBytes
        case .design: signedCount = Self.headerBytes
        }
        guard message.count > 17 + Signing.signatureBytes, signedCount > 17, signedCount + Signing.signatureBytes <= message.count,
            Int(message[0]) < keys.count
        else { throw BenchError("a message is too short or from no floor node") }
        let received = FloorMessage(
            author: Int(message[0]), seq: Self.int64(message, at: 1), writtenMicros: UInt64(bitPattern: Self.int64(message, at: 9)),
            signed: message)
        if rows == .design {
            let bodyHash = message.withUnsafeBytes {
                GenericHash.hash(UnsafeRawBufferPointer(rebasing: $0[(Self.headerBytes + Signing.signatureBytes)...]))
            }
            guard bodyHash[...] == message[Self.headerBytes - 32..<Self.headerBytes] else {
                throw BenchError("a message's body is not the one its header hashes")
            }
        }
        guard UInt64(received.seq) % (ReplicaStore.maxLinkAuthenticatedTail + 1) == 0 else { return received }
        let valid = message.withUnsafeBytes { bytes in
            keys[received.author].publicKey.withUnsafeBytes { key in
                Signing.isValidSignature(
                    UnsafeRawBufferPointer(rebasing: bytes[signedCount..<signedCount + Signing.signatureBytes]),
                    for: UnsafeRawBufferPointer(rebasing: bytes[..<signedCount]), publicKey: key)
            }
        }
        guard valid else { throw BenchError("a message failed its signature check") }
        return received
    }

    /// Stores checked messages received in one wake-up, in one transaction, each stamped with
    /// the wall clock as it is stored (`receivedMicros` is read per message).
    func storeReceived(_ messages: [FloorMessage], stamp receivedMicros: () -> UInt64, each: (FloorMessage, UInt64) -> Void) throws {
        try database.transaction {
            for message in messages {
                let received = receivedMicros()
                switch rows {
                case .plain:
                    try storePlain(message, at: received)
                case .design:
                    try store(message, head: try head(of: message.author), at: received)
                }
                each(message, received)
            }
        }
    }

    private static let noOp = [UInt8](repeating: 0, count: 32)

    /// The plain floor's one row of a message.
    private func storePlain(_ message: FloorMessage, at receivedMicros: UInt64) throws {
        try database.cachedStatement("INSERT INTO ops(author, seq, body, received_at) VALUES (?, ?, ?, ?)")
            .run(.integer(Int64(message.author)), .integer(message.seq), .blob(message.signed), .integer(Int64(receivedMicros / 1_000)))
    }

    private func head(of author: Int) throws -> (seq: Int64, id: [UInt8])? {
        try database.cachedStatement("SELECT max_seq, head_id FROM heads WHERE pid = 1 AND aid = ?")
            .firstRow(.integer(Int64(author))) { ($0.int64(0), $0.blob(1)) }
    }

    /// The design's rows of one op, after its chain check: the op, its head, its view row.
    private func store(_ message: FloorMessage, head: (seq: Int64, id: [UInt8])?, at receivedMicros: UInt64) throws {
        let signed = message.signed
        let prev = Array(signed[Self.headerBytes - 64..<Self.headerBytes - 32])
        guard message.seq == (head?.seq ?? 0) + 1, prev == (head?.id ?? Self.noOp) else {
            throw BenchError("message \(message.seq) of floor node \(message.author) does not follow its chain")
        }
        let id = signed.withUnsafeBytes { GenericHash.hash(UnsafeRawBufferPointer(rebasing: $0[..<Self.headerBytes])) }
        let header = Array(signed[..<(Self.headerBytes + Signing.signatureBytes)])
        let body = Array(signed[(Self.headerBytes + Signing.signatureBytes)...])
        let hlc = Self.int64(signed, at: 17)
        try database.cachedStatement(
            "INSERT INTO ops(pid, aid, seq, type, hlc, header, body, received_at) VALUES (1, ?, ?, 1, ?, ?, ?, ?)"
        ).run(
            .integer(Int64(message.author)), .integer(message.seq), .integer(hlc), .blob(header), .blob(body),
            .integer(Int64(receivedMicros / 1_000)))
        let oid = database.lastInsertRowID
        try database.cachedStatement("INSERT OR REPLACE INTO heads(pid, aid, max_seq, head_id) VALUES (1, ?, ?, ?)")
            .run(.integer(Int64(message.author)), .integer(message.seq), .blob(id))
        try database.cachedStatement("INSERT INTO messages(oid, pid, aid, seq, hlc, op_id, text) VALUES (?, 1, ?, ?, ?, ?, ?)")
            .run(
                .integer(oid), .integer(Int64(message.author)), .integer(message.seq), .integer(hlc), .blob(id),
                .text(String(decoding: body, as: UTF8.self)))
    }

    static func int64(_ bytes: [UInt8], at offset: Int) -> Int64 {
        var value: Int64 = 0
        withUnsafeMutableBytes(of: &value) { $0.copyBytes(from: bytes[offset..<offset + 8]) }
        return Int64(littleEndian: value)
    }
}
