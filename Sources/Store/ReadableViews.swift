import Replica
import SQLite
import Wire

/// Read-only SQL views with readable columns (docs/SCHEMA.md), for people who query a replica with
/// `parley sql`: ids as the text the command line shows, ISO 8601 times, kinds, statuses and
/// presence as words. They are a contract like `--json` (tests query them): add columns freely,
/// never rename one. The tables under them are not: they change with migrations.
///
/// Two SQL functions decode what plain SQL cannot; every store connection defines them
/// (`defineFunctions`), and the views call them:
/// - `parley_id(blob)`: a 32-byte id (user, message, partition, task) as lowercase base32 text;
///   NULL for NULL or another length.
/// - `parley_task(state, field)`: a task's `title`, `status` (`open`, `in-progress`, `complete`),
///   `owner` or `creator` (user ids as text) from its stored state; NULL if it does not decode.
enum ReadableViews {
    static func defineFunctions(on database: Database) throws {
        try database.defineFunction("parley_id", arity: 1) { arguments in
            guard case .blob(let bytes) = arguments[0], bytes.count == 32 else { return .null }
            return .text(Base32.encode(bytes))
        }
        try database.defineFunction("parley_task", arity: 2) { arguments in
            guard case .blob(let bytes) = arguments[0], case .text(let field) = arguments[1],
                let state = try? TaskState(decoding: bytes)
            else { return .null }
            switch field {
            case "title": return .text(state.title.value)
            case "status": return .text(state.status.value.description)
            case "owner": return state.owner.value.map { .text($0.text) } ?? .null
            case "creator": return state.creator.map { .text($0.text) } ?? .null
            default: return .null
            }
        }
    }

    /// An HLC column as UTC ISO 8601 with milliseconds (its upper 48 bits are Unix ms).
    private static func time(_ column: String) -> String {
        "strftime('%Y-%m-%dT%H:%M:%fZ', (\(column) >> 16) / 1000.0, 'unixepoch')"
    }

    /// Migration 013's SQL. `partition_names` is a helper (the kind and name of each partition
    /// by row key) for the documented views, not a documented view itself.
    static let migrationSQL = """
        CREATE VIEW partition_names AS
        SELECT p.pid AS pid, p.id AS id, p.joined AS joined,
            CASE p.kind WHEN 1 THEN 'room' WHEN 2 THEN 'conversation' WHEN 3 THEN 'directory'
                WHEN 4 THEN 'inbox' WHEN 5 THEN 'self' WHEN 6 THEN 'private-room' ELSE 'other' END AS kind,
            CASE p.kind WHEN 1 THEN CAST(substr(p.descriptor, 4) AS TEXT) WHEN 2 THEN c.name
                WHEN 3 THEN 'directory' WHEN 4 THEN 'inbox' WHEN 5 THEN 'self' WHEN 6 THEN r.name ELSE NULL END AS name
        FROM partitions p LEFT JOIN conversations c ON c.pid = p.pid LEFT JOIN private_rooms r ON r.pid = p.pid;

        CREATE VIEW v_partitions AS
        SELECT parley_id(id) AS partition, kind, name, joined FROM partition_names;

        CREATE VIEW v_messages AS
        SELECT parley_id(m.op_id) AS id, n.kind AS kind, n.name AS place, parley_id(n.id) AS partition,
            parley_id(a.key) AS author, f.nick AS nick, \(time("m.hlc")) AS time, m.hlc AS hlc, m.seq AS seq,
            m.text AS text, m.edited AS edited, m.deleted AS deleted,
            (SELECT count(*) FROM attachment_hashes h WHERE h.oid = m.oid) AS attachments,
            m.latitude AS latitude, m.longitude AS longitude, parley_id(m.reply_to) AS reply_to
        FROM messages m JOIN partition_names n ON n.pid = m.pid JOIN authors a ON a.aid = m.aid
            LEFT JOIN profiles f ON f.aid = m.aid;

        CREATE VIEW v_reactions AS
        SELECT parley_id(r.target) AS message, n.kind AS kind, n.name AS place, parley_id(a.key) AS reactor,
            f.nick AS nick, r.emoji AS emoji
        FROM reactions r JOIN partition_names n ON n.pid = r.pid JOIN authors a ON a.aid = r.reactor
            LEFT JOIN profiles f ON f.aid = r.reactor
        WHERE r.on_ = 1;

        CREATE VIEW v_tasks AS
        SELECT parley_id(t.task_id) AS id, n.kind AS kind, n.name AS place, parley_task(t.state, 'title') AS title,
            parley_task(t.state, 'status') AS status, parley_task(t.state, 'owner') AS owner,
            (SELECT f.nick FROM authors a JOIN profiles f ON f.aid = a.aid
                WHERE parley_id(a.key) = parley_task(t.state, 'owner')) AS owner_nick,
            parley_task(t.state, 'creator') AS creator,
            CASE WHEN t.created_hlc IS NULL THEN NULL ELSE \(time("t.created_hlc")) END AS created,
            t.deleted AS deleted
        FROM tasks t JOIN partition_names n ON n.pid = t.pid
        WHERE t.created = 1;

        CREATE VIEW v_people AS
        SELECT parley_id(a.key) AS id, f.nick AS nick, f.display_name AS display_name, f.status AS status,
            CASE f.presence WHEN 0 THEN 'online' WHEN 1 THEN 'away' WHEN 2 THEN 'hidden' ELSE NULL END AS presence_mode,
            (SELECT strftime('%Y-%m-%dT%H:%M:%fZ', s.at / 1000.0, 'unixepoch') FROM last_seen s WHERE s.user = a.key) AS last_seen,
            f.avatar IS NOT NULL AS has_avatar
        FROM profiles f JOIN authors a ON a.aid = f.aid;

        CREATE VIEW v_members AS
        SELECT parley_id(n.id) AS conversation, n.name AS name, parley_id(m.user) AS user,
            (SELECT f.nick FROM authors a JOIN profiles f ON f.aid = a.aid WHERE a.key = m.user) AS nick,
            m.current AS current
        FROM members m JOIN partition_names n ON n.pid = m.pid;
        """
}
