import Identity
import Replica
import SQLite
import Sodium
import Wire

extension Views {
    /// Every view row in a canonical text form, free of local row ids and arrival times: two
    /// replicas with the same op set and the same epoch keys must give identical snapshots
    /// (convergence checks, tests, and the check that a rebuild equals the live views). Keys
    /// themselves are never part of it.
    public func viewSnapshot() throws -> [String] {
        var lines: [String] = []
        func collect(_ sql: String) throws {
            let statement = try database.prepare(sql)
            try statement.forEachRow { row in
                var fields: [String] = []
                for i in 0..<row.columnCount {
                    switch row.value(i) {
                    case .null: fields.append("null")
                    case .integer(let v): fields.append(String(v))
                    case .real(let v): fields.append(String(v))
                    case .text(let v): fields.append(String(reflecting: v))
                    case .blob(let v): fields.append(Sodium.hex(v))
                    }
                }
                lines.append(fields.joined(separator: " "))
            }
        }
        try collect(
            """
            SELECT 'message', p.id, m.op_id, a.key, m.hlc, m.seq, m.text, m.attachments, m.latitude, m.longitude, m.reply_to, m.edited, m.deleted
            FROM messages m JOIN partitions p ON p.pid = m.pid JOIN authors a ON a.aid = m.aid
            """)
        try collect(
            "SELECT 'reaction', p.id, r.target, a.key, r.emoji, r.on_ FROM reactions r JOIN partitions p ON p.pid = r.pid JOIN authors a ON a.aid = r.reactor")
        try collect("SELECT 'profile', a.key, f.nick, f.display_name, f.status, f.presence, f.avatar FROM profiles f JOIN authors a ON a.aid = f.aid")
        try collect("SELECT 'conversation', p.id, c.name, c.name_clock FROM conversations c JOIN partitions p ON p.pid = c.pid")
        try collect("SELECT 'member', p.id, m.user, m.current, m.removed_at FROM members m JOIN partitions p ON p.pid = m.pid")
        try collect(
            "SELECT 'grant', p.id, a.key, g.epoch, g.key_id, g.recipients FROM grants g JOIN partitions p ON p.pid = g.pid JOIN authors a ON a.aid = g.aid")
        try collect("SELECT 'task', p.id, t.task_id, t.state, t.created, t.deleted, t.created_hlc FROM tasks t JOIN partitions p ON p.pid = t.pid")
        try collect("SELECT 'read', owner, target, position FROM read_markers")
        try collect("SELECT 'fork', p.id, a.key, f.seq, f.proof FROM fork_proofs f JOIN partitions p ON p.pid = f.pid JOIN authors a ON a.aid = f.aid")
        return lines.sorted()
    }
}
