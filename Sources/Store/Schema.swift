import SQLite

/// The store's schema, as named migrations (immutable once shipped; add new ones at the end).
///
/// Integer row keys everywhere a B-tree grows with the log (docs/DESIGN.md §5: random 32-byte keys cost
/// 7–25× more per insert); 32-byte ids live in small lookup tables (`partitions`, `authors`), and
/// ops are found by their chain position (`ops_chain`), never by id: an edit or delete names its
/// target's seq as well as its id (no index keyed by a hash grows with the log).
enum Schema {
    static let migrations: [Migration] = [
        Migration(
            "001-op-log",
            """
            CREATE TABLE partitions(
                pid INTEGER PRIMARY KEY,
                id BLOB NOT NULL UNIQUE,
                kind INTEGER NOT NULL,
                descriptor BLOB NOT NULL,
                joined INTEGER NOT NULL DEFAULT 0
            ) STRICT;
            CREATE TABLE authors(
                aid INTEGER PRIMARY KEY,
                key BLOB NOT NULL UNIQUE
            ) STRICT;
            CREATE TABLE ops(
                oid INTEGER PRIMARY KEY,
                pid INTEGER NOT NULL REFERENCES partitions(pid),
                aid INTEGER NOT NULL REFERENCES authors(aid),
                seq INTEGER NOT NULL,
                type INTEGER NOT NULL,
                hlc INTEGER NOT NULL,
                header BLOB NOT NULL,
                body BLOB NOT NULL,
                received_at INTEGER NOT NULL
            ) STRICT;
            CREATE UNIQUE INDEX ops_chain ON ops(pid, aid, seq);
            CREATE TABLE heads(
                pid INTEGER NOT NULL,
                aid INTEGER NOT NULL,
                max_seq INTEGER NOT NULL,
                head_id BLOB NOT NULL,
                frozen_at INTEGER,
                PRIMARY KEY(pid, aid)
            ) STRICT, WITHOUT ROWID;
            CREATE TABLE fork_proofs(
                pid INTEGER NOT NULL,
                aid INTEGER NOT NULL,
                seq INTEGER NOT NULL,
                proof BLOB NOT NULL,
                PRIMARY KEY(pid, aid)
            ) STRICT;
            CREATE TABLE settings(
                key TEXT PRIMARY KEY,
                value ANY
            ) STRICT;
            """),
        Migration(
            "002-views",
            """
            CREATE TABLE messages(
                oid INTEGER PRIMARY KEY,
                pid INTEGER NOT NULL,
                aid INTEGER NOT NULL,
                seq INTEGER NOT NULL,
                hlc INTEGER NOT NULL,
                op_id BLOB NOT NULL,
                text TEXT NOT NULL,
                attachments BLOB,
                latitude REAL,
                longitude REAL,
                reply_to BLOB,
                edited INTEGER NOT NULL DEFAULT 0,
                deleted INTEGER NOT NULL DEFAULT 0
            ) STRICT;
            CREATE INDEX messages_in_order ON messages(pid, hlc);
            CREATE TABLE reactions(
                pid INTEGER NOT NULL,
                target BLOB NOT NULL,
                reactor INTEGER NOT NULL,
                emoji TEXT NOT NULL,
                on_ INTEGER NOT NULL,
                PRIMARY KEY(pid, target, reactor, emoji)
            ) STRICT;
            CREATE TABLE profiles(
                aid INTEGER PRIMARY KEY,
                nick TEXT,
                display_name TEXT,
                status TEXT,
                presence INTEGER,
                avatar BLOB
            ) STRICT;
            CREATE TABLE conversations(
                pid INTEGER PRIMARY KEY,
                name TEXT NOT NULL,
                name_clock BLOB NOT NULL
            ) STRICT;
            CREATE TABLE membership_events(
                oid INTEGER PRIMARY KEY,
                pid INTEGER NOT NULL
            ) STRICT;
            CREATE INDEX membership_by_partition ON membership_events(pid);
            CREATE TABLE members(
                pid INTEGER NOT NULL,
                user BLOB NOT NULL,
                current INTEGER NOT NULL,
                PRIMARY KEY(pid, user)
            ) STRICT;
            CREATE TABLE tasks(
                pid INTEGER NOT NULL,
                task_id BLOB NOT NULL,
                state BLOB NOT NULL,
                created INTEGER NOT NULL,
                deleted INTEGER NOT NULL,
                created_hlc INTEGER,
                PRIMARY KEY(pid, task_id)
            ) STRICT;
            CREATE TABLE read_markers(
                owner BLOB NOT NULL,
                target BLOB NOT NULL,
                position INTEGER NOT NULL,
                PRIMARY KEY(owner, target)
            ) STRICT;
            """),
        // Private conversations (docs/DESIGN.md §3.5). `grants` is a view (carriers fill it too;
        // `for_me` marks grants addressed to a local identity); `epoch_keys` holds the keys this
        // node opened from such grants — local secrets, kept across rebuilds, never replicated,
        // usable while a stored grant addressed to a local identity carries them; `blobs` holds
        // attachment and avatar content by hash; `processed_invites` remembers which invites
        // were acted on.
        Migration(
            "003-conversation-keys",
            """
            CREATE TABLE grants(
                oid INTEGER PRIMARY KEY,
                pid INTEGER NOT NULL,
                aid INTEGER NOT NULL,
                epoch INTEGER NOT NULL,
                key_id BLOB NOT NULL,
                recipients BLOB NOT NULL,
                for_me INTEGER NOT NULL DEFAULT 0
            ) STRICT;
            CREATE INDEX grants_by_partition ON grants(pid);
            CREATE TABLE epoch_keys(
                pid INTEGER NOT NULL,
                key_id BLOB NOT NULL,
                epoch INTEGER NOT NULL,
                key BLOB NOT NULL,
                PRIMARY KEY(pid, key_id)
            ) STRICT;
            CREATE TABLE blobs(
                hash BLOB PRIMARY KEY,
                size INTEGER NOT NULL,
                data BLOB NOT NULL,
                stored_at INTEGER NOT NULL
            ) STRICT;
            CREATE TABLE processed_invites(
                op_id BLOB PRIMARY KEY
            ) STRICT, WITHOUT ROWID;
            ALTER TABLE members ADD COLUMN removed_at INTEGER;
            """),
        // When each peer was last seen on a link (docs/DESIGN.md §3.4: kept locally per peer, never an
        // op), so `people` shows it after the node stopped; and read receipts, a view: the
        // newest message each member said it read in a conversation (an encrypted read marker
        // written into the conversation itself).
        Migration(
            "004-last-seen-and-receipts",
            """
            CREATE TABLE last_seen(
                user BLOB PRIMARY KEY,
                at INTEGER NOT NULL
            ) STRICT, WITHOUT ROWID;
            CREATE TABLE read_receipts(
                pid INTEGER NOT NULL,
                aid INTEGER NOT NULL,
                position INTEGER NOT NULL,
                PRIMARY KEY(pid, aid)
            ) STRICT, WITHOUT ROWID;
            """),
        // The attachments' hashes by partition, for the blob queries (`missingBlobs` every few
        // seconds, `isBlobNamed` for every BLOB_WANT a peer sends): without it each read and
        // decoded every message of the store or partition, 0.16 s with 1,000,000 messages, so a
        // peer's BLOB_WANTs could keep a node busy. A view like the others: rows are added with
        // their message (`applyViews`), a delete (which clears the message's attachments) drops
        // them here, and rebuilds empty it with `messages`. A store from before it is filled
        // from its messages by 009.
        Migration(
            "005-attachment-hashes",
            """
            CREATE TABLE attachment_hashes(
                pid INTEGER NOT NULL,
                hash BLOB NOT NULL,
                oid INTEGER NOT NULL,
                PRIMARY KEY(pid, hash, oid)
            ) STRICT, WITHOUT ROWID;
            CREATE INDEX attachment_hashes_by_message ON attachment_hashes(oid);
            CREATE TRIGGER attachment_hashes_of_deleted_messages AFTER UPDATE OF attachments ON messages
            WHEN new.attachments IS NULL BEGIN
                DELETE FROM attachment_hashes WHERE oid = new.oid;
            END;
            """),
        // An op pushed by its own author over the author's authenticated link is stored before
        // its signature is checked (`ReplicaStore.maxLinkAuthenticatedTail`): the link already
        // proves who wrote it. `unchecked_from` is the first seq of the chain's tail of such ops
        // (NULL: none); a checked signature at or above it authenticates the tail below it
        // (docs/DESIGN.md §3.3), and no op of the tail leaves the node before that
        // (`OutboundChecks.sendable`). A value above `max_seq` (the chain was truncated since)
        // means no tail.
        Migration(
            "006-link-authenticated-tails",
            """
            ALTER TABLE heads ADD COLUMN unchecked_from INTEGER;
            """),
        // Every op that leaves a node carries a signature that node checked (docs/ARCHITECTURE.md,
        // *Every op that leaves a node has a checked signature*). `signature_checked` is 1 once the op's own signature was verified;
        // 0 while the op is held on the word of a later op of its chain (chain-batched
        // verification) or of its author's link, and for every op stored before this
        // migration: those are checked the first time they are about to leave
        // (`OutboundChecks.sendable`). A position whose op was removed there for a bad signature
        // is kept in `refused_signatures`: the next op to arrive for it has its own signature
        // checked, so the same bad copy cannot come back on a chain's word.
        Migration(
            "007-checked-signatures",
            """
            ALTER TABLE ops ADD COLUMN signature_checked INTEGER NOT NULL DEFAULT 0;
            CREATE TABLE refused_signatures(
                pid INTEGER NOT NULL,
                aid INTEGER NOT NULL,
                seq INTEGER NOT NULL,
                refused_at INTEGER NOT NULL,
                PRIMARY KEY(pid, aid, seq)
            ) STRICT, WITHOUT ROWID;
            """),
        // A deleted message's words leave every replica's storage (docs/ARCHITECTURE.md, *A
        // delete erases the words*): the body of a room's deleted post, and of the author's
        // edits of it, is emptied, and `erasure` holds the author's delete that erased it
        // (`header ‖ body`, the proof a peer or an import checks before it takes the op erased).
        // NULL: the body is held. Ops deleted before this migration are erased by 009.
        Migration(
            "008-erased-bodies",
            """
            ALTER TABLE ops ADD COLUMN erasure BLOB;
            """),
        // The backfills of 005 and 008, which earlier versions ran at open until a setting
        // recorded each done: a store where a setting is missing has not had that one yet
        // (`finishBackfills`), and the settings go.
        Migration("009-backfills", "", code: { try Schema.finishBackfills($0) }),
        // The private rooms this node holds (docs/DESIGN.md §3.7): local only, never replicated.
        // `room_seed` is NULL for an earlier epoch learned from its successor's link op (read,
        // not written); `successor` is the pid of the epoch that replaced it.
        Migration(
            "010-private-rooms",
            """
            CREATE TABLE private_rooms(
                pid INTEGER PRIMARY KEY REFERENCES partitions(pid),
                name TEXT NOT NULL,
                room_seed BLOB,
                content_key BLOB NOT NULL,
                successor INTEGER
            ) STRICT;
            CREATE INDEX private_rooms_by_name ON private_rooms(name);
            """),
        // Room policies (docs/DESIGN.md §3.4, *Room policies*): `policy_events` lists a room's
        // policy ops (a view, like `membership_events`: they are few, and the policy is resolved
        // from all of them); `room_policies` is the policy in force and its owner. `joined_at`
        // is when this node's user joined a room (Unix ms; NULL: before this migration), which
        // hides older messages when the room's policy gives new joiners no history.
        Migration(
            "011-room-policies",
            """
            CREATE TABLE policy_events(
                oid INTEGER PRIMARY KEY,
                pid INTEGER NOT NULL
            ) STRICT;
            CREATE INDEX policy_events_by_partition ON policy_events(pid);
            CREATE TABLE room_policies(
                pid INTEGER PRIMARY KEY,
                owner BLOB NOT NULL,
                topic TEXT NOT NULL,
                retention TEXT NOT NULL,
                history INTEGER NOT NULL
            ) STRICT;
            ALTER TABLE partitions ADD COLUMN joined_at INTEGER;
            """),
        // Readable views for `parley sql` (docs/SCHEMA.md; `ReadableViews`); 011 and 012 are
        // the room policies' and the store at rest's.
        Migration("013-readable-views", ReadableViews.migrationSQL),
        Migration(
            "014-devices",
            """
            CREATE TABLE devices(
                device_aid INTEGER PRIMARY KEY,
                person_aid INTEGER NOT NULL,
                certifier_aid INTEGER NOT NULL,
                name TEXT NOT NULL,
                hlc INTEGER NOT NULL,
                clock BLOB NOT NULL,
                oid INTEGER NOT NULL
            ) STRICT;
            CREATE INDEX devices_of_person ON devices(person_aid);
            CREATE TABLE device_revocations(
                oid INTEGER PRIMARY KEY,
                device_aid INTEGER NOT NULL,
                person_aid INTEGER NOT NULL,
                author_aid INTEGER NOT NULL,
                clock BLOB NOT NULL,
                body BLOB NOT NULL
            ) STRICT;
            """),
        // Chats muted by their reader (`OperationBody.chatMute`): the newest op by (hlc,
        // writer, seq) is the row, whichever order the ops came in.
        Migration(
            "015-mutes",
            """
            CREATE TABLE mutes(
                owner BLOB NOT NULL,
                target BLOB NOT NULL,
                muted INTEGER NOT NULL,
                hlc INTEGER NOT NULL,
                writer BLOB NOT NULL,
                seq INTEGER NOT NULL,
                PRIMARY KEY(owner, target)
            ) STRICT;
            """),
        // `received_at` in Unix microseconds (it was milliseconds): deliveries a fraction of a
        // millisecond apart are told apart (docs/BENCHMARKS.md).
        Migration("016-received-at-micros", "UPDATE ops SET received_at = received_at * 1000;"),
    ]

    /// Runs, once, each backfill a store has not had yet: the attachments' hashes of the
    /// messages stored before 005 (`Views.fillAttachmentHashes`), then the bodies of the room
    /// posts deleted before 008 (`OpLog.eraseDeletedBodies`), each unless its setting says it
    /// was done; then drops the settings. Inside 009's transaction, over parts of its own: the
    /// store's are made after the migrations.
    static func finishBackfills(_ database: Database) throws {
        let log = OpLog(database: database, isReadOnly: false)
        let views = Views(
            database: database, log: log, keys: KeyRing(database: database, log: log), devices: Devices(database: database, log: log), isReadOnly: false)
        let filled: Int64? = try database.scalar("SELECT value FROM settings WHERE key = 'attachment_hashes_filled'")
        if filled == nil { try views.fillAttachmentHashes() }
        let erased: Int64? = try database.scalar("SELECT value FROM settings WHERE key = 'deleted_bodies_erased'")
        if erased == nil { try log.eraseDeletedBodies() }
        try database.execute("DELETE FROM settings WHERE key IN ('attachment_hashes_filled', 'deleted_bodies_erased')")
    }

    /// View tables, emptied before a rebuild from the log.
    static let viewTables = [
        "messages", "attachment_hashes", "reactions", "profiles", "conversations", "membership_events", "members", "tasks", "read_markers", "grants",
        "read_receipts", "policy_events", "room_policies", "devices", "device_revocations", "mutes",
    ]
}
