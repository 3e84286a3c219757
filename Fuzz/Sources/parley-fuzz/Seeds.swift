import Discovery
import Foundation
import Gossip
import Identity
import LinkProtocol
import Replica
import SecureLink
import Wire

/// Genuine inputs for every target, so the fuzzer starts from messages that decode
/// (`parley-fuzz --write-seeds DIR`; the committed corpus in Fuzz/corpus came from it).
enum Seeds {
    static func write(to directory: String) throws {
        for (target, inputs) in all() {
            let folder = URL(fileURLWithPath: directory).appendingPathComponent(target)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for (index, input) in inputs.enumerated() {
                try Data(input).write(to: folder.appendingPathComponent(String(format: "seed-%02d", index)))
            }
        }
    }

    static func all() -> [String: [[UInt8]]] {
        let author = LinkKeys.client
        let room = PartitionDescriptor.room(RoomName("lobby")!)
        let hash = Bytes32([UInt8](repeating: 5, count: 32))!
        let target = OpID(hash)
        let bodies: [OperationBody] = [
            .post(text: "hello", attachments: [Attachment(name: "map.png", size: 12, mime: "image/png", hash: hash)], location: nil, replyTo: nil),
            .post(text: "here", attachments: [], location: Location(latitude: 48.8, longitude: 2.3), replyTo: target),
            .edit(target: target, targetSeq: 1, text: "hello, world"),
            .delete(target: target, targetSeq: 1),
            .react(target: target, emoji: "👍", on: true),
            .profile(subject: author.id, nick: "alice", displayName: "Alice", status: "in the lab", presence: .online, avatar: nil),
            .conversationCreate(name: "lab night", members: [author.id, LinkKeys.server.id]),
            .memberAdd(LinkKeys.server.id), .memberRemove(LinkKeys.server.id), .memberLeave,
            .conversationRename(name: "lab day"),
            .taskCreate(title: "book the room", owner: author.id),
            .taskUpdate(target: target, title: "book it", status: .inProgress, owner: .cleared),
            .taskDelete(target: target),
            .readMarker(partition: room.id, position: HLC(wallMillis: 1_000, counter: 1)),
            .chatMute(partition: room.id, muted: true),
        ]
        var ops: [Replica.Operation] = []
        var prev = OpID(Bytes32(w0: 0, w1: 0, w2: 0, w3: 0))
        for (index, body) in bodies.enumerated() {
            let op = Operation.sign(
                type: body.type, partition: room.id, seq: UInt64(index + 1), prev: prev, hlc: HLC(wallMillis: 1_000 + UInt64(index), counter: 0),
                body: body.encoded, by: author)
            ops.append(op)
            prev = op.id
        }
        var archive: [UInt8] = []
        let writer = try! OpArchive.Writer { archive += $0 }
        try! writer.write(.partition(room))
        for op in ops.prefix(4) { try! writer.write(.operation(op)) }
        try! writer.finish()
        let beaconFields: [UInt8] =
            [1] + [UInt8](repeating: 3, count: 8) + author.id.raw.bytes + [0, 0, 0, 0, 0, 0, 0, 9] + [0, 0, 0x13, 0x88] + [0x1E, 0x44, 0]
        let head = Head(author: author.id, maxSeq: UInt64(ops.count), headID: ops.last!.id)
        let sync: [SyncMessage] = [
            .summary(more: false, entries: [SummaryEntry(partition: room.id, digest: hash, descriptor: room)]),
            .vector(partition: room.id, more: true, heads: [head]),
            .want(partition: room.id, author: author.id, fromSeq: 1, maxCount: 64),
            .ops(OpBatch(partition: room.id, author: author.id, ops: Array(ops.prefix(3)), isLast: true)),
            .newOp(ops[0]),
            .skip([ChainKey(partition: room.id, author: author.id)]),
            .resume([ChainKey(partition: room.id, author: author.id), ChainKey(partition: room.id, author: LinkKeys.server.id)]),
            .compactVector(
                partition: .full(room.id.raw), more: false,
                heads: [CompactHead(author: .number(1), maxSeq: head.maxSeq, headID: head.headID, frozenAt: nil)]),
            .compactAnnounce(partition: .number(1), heads: [CompactAnnouncedHead(author: .full(author.id.raw), seq: 3)]),
            .compactSkip([CompactChain(partition: .number(1), author: .number(2))]),
        ]
        let hello = LinkHello(
            instance: InstanceID(raw: 42), listenPort: 7748, nick: "alice", sync: SyncHello(protocolVersion: 1, maxFrame: 1 << 20, features: 0))
        let link: [LinkMessage] = [
            .hello(hello), .ping(nonce: 7), .pong(nonce: 7), .bye(.shutdown),
            .addresses([PeerAddress(peer: LinkKeys.server.id, endpoint: PeerEndpoint(host: "192.168.1.20", port: 7748))]),
        ]
        let peersFile = """
            # the lab
            192.168.1.20:7748
            [fe80::1%eth0]:7748 \(LinkKeys.server.id)
            build-box.local:7750\t# a comment

            """
        let web = [
            "\u{3}GET\n/api/partitions\n\n",
            "\u{3}POST\n/api/partitions/abc/messages\ncontent-type: application/json\n\n{\"text\":\"hi\",\"replyTo\":null,\"attachments\":[{\"name\":\"a\"}]}",
            "\u{1}GET\n/\norigin: http://127.0.0.1:7749\ncookie: parley_token_7749=ab\n\n",
            "\u{7}GET\n/\n\n",
            "\u{3}PUT\n/api/me/profile\n\n{\"nick\":\"bob\",\"status\":1.5,\"presence\":true}",
        ]
        return [
            "beacon": [[0] + LinkBeacons.sample(author.id), beaconFields],
            "handshake": [[0] + [UInt8](repeating: 0, count: 64), [4, 17, 1], [5, 3, 0x80], [6, 100, 2], [7, 63, 1]],
            "frame": [[1, 3, 4] + Array("one two three four five".utf8) + [0, 0, 1, 0, 40, 40], [0] + [0, 0, 0, 40] + [UInt8](repeating: 1, count: 40)],
            "sync": sync.map { $0.encode() },
            "link": link.map(\.encoded),
            "op": ops.map(\.encoded),
            "body": zip(bodies, ops).map { [$1.type] + $0.encoded } + [[0] + room.encoded, [1, 0, 0, 0, 1] + [UInt8](repeating: 0, count: 40)],
            "peers": [Array(peersFile.utf8), Array("[::1]:7748\r\n10.0.0.1:1\r\n".utf8)],
            "addresses": [PeerAddressList.encode([PeerAddress(peer: author.id, endpoint: PeerEndpoint(host: "::1", port: 7748))])],
            "archive": [archive],
            "web": web.map { Array($0.utf8) },
        ]
    }
}

enum LinkBeacons {
    static func sample(_ identity: UserID) -> [UInt8] {
        Beacon(tcpPort: 7748, instanceID: InstanceID(raw: 1), identity: identity, seq: 1, interval: 5_000).encoded(key: fuzzBeaconKey)
    }
}
