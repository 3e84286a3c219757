import NodeRuntime
import Wire

/// The lab's seeded workload: which node writes what, where. Pure: it picks from what the lab
/// knows was acknowledged, so the same seed makes the same choices whenever the same writes
/// were acknowledged.
///
/// Mix: posts (most), edits and deletes of the node's own posts, reactions, tasks created and
/// moved, and conversation membership changes by the conversation's creator; spread over the
/// rooms and, for a quarter of the writes, the conversations the node is a member of.
public struct Workload: Sendable {
    /// A room, by name and partition id (text).
    public struct Room: Sendable, Equatable {
        public var name: String
        public var partition: String
        public init(name: String, partition: String) { (self.name, self.partition) = (name, partition) }
    }

    /// A conversation as the lab's acknowledged writes made it.
    public struct Conversation: Sendable, Equatable {
        public var partition: String
        public var creator: Int
        public var members: Set<Int>
        /// Everyone who was ever a member: the nodes that hold it (carriers aside).
        public var everMembers: Set<Int>
        /// When each ever-member was first added (the lab's clock, Unix ms): ops written before
        /// reach a later member as history, not as live delivery.
        public var memberSince: [Int: UInt64] = [:]
    }

    public let rooms: [Room]
    public private(set) var conversations: [Conversation] = []
    /// Acknowledged posts per partition: (op id, author node), in order.
    private var posts: [String: [(id: String, node: Int)]] = [:]
    private var tasks: [String: [String]] = [:]
    private var sequence = 0

    public init(rooms: [Room]) {
        self.rooms = rooms
    }

    /// The nodes that should hold `partition` (every node for rooms and the directory).
    public func holders(of partition: String, nodes: Int) -> Set<Int> {
        conversations.first { $0.partition == partition }?.everMembers ?? Set(0..<nodes)
    }

    /// Since when `node` holds `partition` (0: from the start).
    public func holder(_ node: Int, since partition: String) -> UInt64 {
        conversations.first { $0.partition == partition }?.memberSince[node] ?? 0
    }

    /// The next write: a node among `available` and its request; nil when none is available.
    public mutating func next(available: [Int], nodes: Int, random: inout SeededRandom) -> (node: Int, request: AuthorRequest)? {
        guard !available.isEmpty else { return nil }
        sequence += 1
        let node = available[Int(random.next() % UInt64(available.count))]
        let roll = random.unit()
        // Membership changes: 5%, by a creator, when the node created a conversation.
        if roll < 0.05, let request = membershipChange(by: node, nodes: nodes, random: &random) { return (node, request) }
        let memberOf = conversations.filter { $0.members.contains(node) }
        var target = AuthorRequest(kind: "post")
        let partition: String
        if !memberOf.isEmpty, random.unit() < 0.25 {
            let conversation = memberOf[Int(random.next() % UInt64(memberOf.count))]
            partition = conversation.partition
            target.conversation = partition
        } else {
            let room = rooms[Int(random.next() % UInt64(rooms.count))]
            partition = room.partition
            target.room = room.name
        }
        let own = (posts[partition] ?? []).filter { $0.node == node }
        let all = posts[partition] ?? []
        let taskIDs = tasks[partition] ?? []
        var request = target
        switch roll {
        case 0.05..<0.15 where !own.isEmpty:
            request.kind = "edit"
            request.target = own[Int(random.next() % UInt64(own.count))].id
            request.text = "edit \(sequence) by node \(node)"
        case 0.15..<0.19 where !own.isEmpty:
            request.kind = "delete"
            request.target = own[Int(random.next() % UInt64(own.count))].id
        case 0.19..<0.34 where !all.isEmpty:
            request.kind = "react"
            request.target = all[Int(random.next() % UInt64(all.count))].id
            request.emoji = ["👍", "🎉", "👀", "❤️"][Int(random.next() % 4)]
        case 0.34..<0.42:
            request.kind = "task-add"
            request.text = "task \(sequence) from node \(node)"
        case 0.42..<0.50 where !taskIDs.isEmpty:
            request.kind = "task-set"
            request.target = taskIDs[Int(random.next() % UInt64(taskIDs.count))]
            request.status = ["open", "in-progress", "complete"][Int(random.next() % 3)]
        default:
            request.kind = "post"
            request.text = "message \(sequence) from node \(node)"
        }
        return (node, request)
    }

    /// An add of a node that never was a member, or a remove of a member (not the creator).
    private mutating func membershipChange(by node: Int, nodes: Int, random: inout SeededRandom) -> AuthorRequest? {
        let own = conversations.filter { $0.creator == node }
        guard !own.isEmpty else { return nil }
        let conversation = own[Int(random.next() % UInt64(own.count))]
        let newcomers = (0..<nodes).filter { !conversation.everMembers.contains($0) }
        let removable = conversation.members.subtracting([node]).sorted()
        if !newcomers.isEmpty, removable.count < 2 || random.unit() < 0.6 {
            return AuthorRequest(
                kind: "member-add", conversation: conversation.partition, member: "#\(newcomers[Int(random.next() % UInt64(newcomers.count))])")
        }
        guard !removable.isEmpty else { return nil }
        return AuthorRequest(kind: "member-remove", conversation: conversation.partition, member: "#\(removable[Int(random.next() % UInt64(removable.count))])")
    }

    /// A conversation-create request: `creator` with `members` (node indices).
    public static func createConversation(by creator: Int, members: [Int], name: String) -> AuthorRequest {
        AuthorRequest(kind: "conversation-create", text: name, members: members.map { "#\($0)" })
    }

    /// Records an acknowledged write (`request` as sent, with node placeholders `#N`, and the
    /// op id and partition the node answered).
    public mutating func acknowledged(_ request: AuthorRequest, by node: Int, id: String, partition: String, at millis: UInt64 = 0) {
        switch request.kind {
        case "post": posts[partition, default: []].append((id, node))
        case "delete": posts[partition]?.removeAll { $0.id == request.target }
        case "task-add": tasks[partition, default: []].append(id)
        case "conversation-create":
            let members = Set((request.members ?? []).compactMap(Self.placeholder)).union([node])
            conversations.append(
                Conversation(
                    partition: partition, creator: node, members: members, everMembers: members,
                    memberSince: Dictionary(uniqueKeysWithValues: members.map { ($0, millis) })))
        case "member-add":
            guard let member = request.member.flatMap(Self.placeholder), let index = conversationIndex(partition) else { return }
            conversations[index].members.insert(member)
            if conversations[index].everMembers.insert(member).inserted { conversations[index].memberSince[member] = millis }
        case "member-remove":
            guard let member = request.member.flatMap(Self.placeholder), let index = conversationIndex(partition) else { return }
            conversations[index].members.remove(member)
        default: break
        }
    }

    private func conversationIndex(_ partition: String) -> Int? {
        conversations.firstIndex { $0.partition == partition }
    }

    /// The node index of a `#N` placeholder.
    public static func placeholder(_ text: String) -> Int? {
        text.hasPrefix("#") ? Int(text.dropFirst()) : nil
    }

    /// `request` with node placeholders (`#N`) replaced by the nodes' user ids.
    public static func resolve(_ request: AuthorRequest, ids: [String]) -> AuthorRequest {
        var resolved = request
        func id(_ text: String) -> String { placeholder(text).flatMap { ids.indices.contains($0) ? ids[$0] : nil } ?? text }
        resolved.member = request.member.map(id)
        resolved.members = request.members?.map(id)
        return resolved
    }
}
