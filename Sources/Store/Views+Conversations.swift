import Identity
import Replica
import SQLite
import Sodium
import Wire

/// A conversation as listed for one reader.
public struct ConversationSummary: Hashable, Sendable {
    public var id: PartitionID
    public var creator: UserID
    /// Empty until the reader can open the (encrypted) name, or when it was never set.
    public var name: String
    /// Current members, by id.
    public var members: [UserID]
    /// Whether the reader is a current member.
    public var isMember: Bool
    public var joined: Bool
    public var unread: Int
    /// Muted by the reader (`Views.isMuted`).
    public var muted = false
}

/// Conversations as the views list them.
extension Views {
    /// The conversations `reader` takes part in — joined ones, and any it is a current member of
    /// (ops can arrive before the invite does); every known one with `includeCarried` — the
    /// most recently learned first.
    public func conversations(reader: UserID, includeCarried: Bool = false) throws -> [ConversationSummary] {
        var summaries: [ConversationSummary] = []
        for record in try log.partitions().reversed() {
            guard case .conversation(let creator, _) = record.descriptor else { continue }
            let membership = try keys.membershipState(pid: record.pid)
            guard includeCarried || record.joined || membership.current.contains(reader) else { continue }
            let name = try database.scalar("SELECT name FROM conversations WHERE pid = ?", .integer(record.pid), as: String.self) ?? ""
            summaries.append(
                ConversationSummary(
                    id: record.id, creator: creator, name: name, members: membership.current.sorted(),
                    isMember: membership.current.contains(reader), joined: record.joined, unread: try unreadCount(record.id, reader: reader),
                    muted: try isMuted(record.id, owner: reader)))
        }
        return summaries
    }

    /// Partitions to export with a conversation: itself, the directory (names travel with
    /// messages) and the inboxes of its ever-members held here (invites travel too).
    public func exportSet(forConversation partition: PartitionID) throws -> [PartitionID] {
        guard let record = try log.partition(partition), record.descriptor.kind == .conversation else { return [] }
        let members = try keys.membershipState(pid: record.pid).everMember
        let inboxes = try log.partitions().filter { if case .inbox(let owner) = $0.descriptor { members.contains(owner) } else { false } }
        return [partition, PartitionDescriptor.directory.id] + inboxes.map(\.id)
    }
}
