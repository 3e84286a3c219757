import Gossip
import Identity
import LinkProtocol
import Replica
import Store

/// One room of the directory (`parley rooms --all`): this node's view merged with what its
/// linked peers list. Topics and counts from peers are their word (SECURITY.md, *Room directory*).
public struct DirectoryRoom: Hashable, Sendable {
    public var name: RoomName
    public var topic: String
    /// The largest count any report gives (this node's own included).
    public var people: Int
    /// Whether this node's user joined it.
    public var joined: Bool
    /// Linked peers that list it.
    public var listedBy: Int
}

/// The room directory (docs/ARCHITECTURE.md, *The room directory*): a node lists the public rooms
/// it joined (ROOMS) to each linked peer that reads them, when the link is ready and when the list
/// changes, and keeps each peer's last list until that link ends.
extension GossipHandler {
    /// How often the own list is read again (a room joined by another process, a new topic, a
    /// new author); it is sent only to peers it changed for.
    static let roomListCheckInterval: UInt64 = 2_000
    /// A list unchanged this long is sent again, so a peer's table never holds a stale one
    /// (receivers drop lists older than `roomListMaxAge`).
    static let roomListRefreshInterval: UInt64 = 5 * 60_000
    static let roomListMaxAge: UInt64 = 15 * 60_000

    func roomDirectoryLinkOpened(_ peer: UserID, hello: SyncHello, node: isolated Node) {
        peerRoomLists[peer] = nil
        sentRoomLists[peer] = nil
        guard hello.features & SyncHello.roomDirectory != 0 else {
            roomDirectoryPeers.remove(peer)
            return
        }
        roomDirectoryPeers.insert(peer)
        guard configuration.listsRooms, let rooms = storeCall(node, nil, "listing the joined rooms", { try ownRoomListings(node: node) }) else { return }
        sendRoomList(rooms, to: peer, node: node)
    }

    func roomDirectoryLinkClosed(_ peer: UserID) {
        peerRoomLists[peer] = nil
        sentRoomLists[peer] = nil
        roomDirectoryPeers.remove(peer)
    }

    /// Every `roomListCheckInterval`: drops lists past their age, and sends the own list to each
    /// peer it changed for (or that has not had it for `roomListRefreshInterval`).
    func roomDirectoryTick(node: isolated Node) {
        let now = node.monotonicMillis
        guard now >= nextRoomListCheck else { return }
        nextRoomListCheck = now + Self.roomListCheckInterval
        retentionTick(node: node)
        peerRoomLists = peerRoomLists.filter { now < $0.value.at + Self.roomListMaxAge }
        guard configuration.listsRooms, !roomDirectoryPeers.isEmpty,
            let rooms = storeCall(node, nil, "listing the joined rooms", { try ownRoomListings(node: node) })
        else { return }
        for peer in roomDirectoryPeers.sorted() {
            if let sent = sentRoomLists[peer], sent.rooms == rooms, now < sent.at + Self.roomListRefreshInterval { continue }
            sendRoomList(rooms, to: peer, node: node)
        }
    }

    /// Rooms kept for N days: what fell outside since the last look expires (every
    /// `roomListCheckInterval`; a keep-the-last-N retention is enforced as ops apply).
    private func retentionTick(node: isolated Node) {
        let store = node.store!
        guard
            let expired = storeCall(
                node, nil, "dropping messages outside their rooms' retention", { try store.views.expireByClock(nowMillis: node.wallMillis) }),
            expired > 0
        else { return }
        node.log.info("retention: dropped the words of \(expired) ops outside their rooms' retention")
        node.emit(.changed([]))
    }

    private func sendRoomList(_ rooms: [RoomListing], to peer: UserID, node: isolated Node) {
        guard sessions[peer] != nil else { return }
        _ = node.send(SyncFrame(type: RoomListMessage.type, payload: RoomListMessage.body(rooms)), to: peer)
        sentRoomLists[peer] = (rooms, node.monotonicMillis)
    }

    /// A ROOMS frame: replaces the peer's list; a malformed one breaks the sync protocol.
    func receivedRoomList(_ payload: [UInt8], from peer: UserID, node: isolated Node) throws(LinkViolation) {
        let rooms: [RoomListing]
        do {
            rooms = try RoomListMessage.rooms(fromBody: payload)
        } catch {
            throw LinkViolation("malformed ROOMS: \(error)")
        }
        peerRoomLists[peer] = (rooms, node.monotonicMillis)
    }

    /// The public rooms this node's user joined, by name, with their topics and people counts
    /// (the first `RoomListMessage.maxRooms`).
    func ownRoomListings(node: isolated Node) throws -> [RoomListing] {
        let store = node.store!
        var rooms: [RoomListing] = []
        for record in try store.log.partitions() where record.joined {
            guard case .room(let name) = record.descriptor else { continue }
            let topic = try store.views.roomPolicy(record.id)?.policy.topic ?? ""
            let people = try store.views.roomPeople(record.id, me: node.identity.id)
            rooms.append(RoomListing(name: name, topic: topic, people: UInt32(clamping: people)))
        }
        return Array(rooms.sorted { $0.name.value < $1.name.value }.prefix(RoomListMessage.maxRooms))
    }

    /// The directory: the rooms this node joined and those its linked peers list, by name. A
    /// room's topic is this node's own view when it holds the room, else the one reported by
    /// the peer counting the most people; its count is the largest report.
    func roomDirectory(node: isolated Node) throws -> [DirectoryRoom] {
        var rooms: [String: DirectoryRoom] = [:]
        for own in try ownRoomListings(node: node) {
            rooms[own.name.value] = DirectoryRoom(name: own.name, topic: own.topic, people: Int(own.people), joined: true, listedBy: 0)
        }
        let now = node.monotonicMillis
        for (_, list) in peerRoomLists.sorted(by: { $0.key < $1.key }) where now < list.at + Self.roomListMaxAge {
            for listing in list.rooms {
                guard var room = rooms[listing.name.value] else {
                    rooms[listing.name.value] = DirectoryRoom(
                        name: listing.name, topic: listing.topic, people: Int(listing.people), joined: false, listedBy: 1)
                    continue
                }
                room.listedBy += 1
                if !room.joined, Int(listing.people) > room.people { room.topic = listing.topic }
                room.people = max(room.people, Int(listing.people))
                rooms[listing.name.value] = room
            }
        }
        return rooms.values.sorted { $0.name.value < $1.name.value }
    }
}

extension Node {
    /// The room directory: this node's joined rooms and the public rooms its linked peers list
    /// (`parley rooms --all`, `/list`, the page's "Browse rooms").
    public func roomDirectory() throws -> [DirectoryRoom] {
        guard store != nil, let handler = handler as? GossipHandler else { return [] }
        return try handler.roomDirectory(node: self)
    }
}
