import Foundation
import Identity
import LinkProtocol
import Replica
import Store

/// The control socket's protocol: one JSON request per line in, one JSON response per line out,
/// on `control.sock` in the data directory (mode 0600). Keys are snake_case.
///
/// Requests: `{"request": "peers"}`, `"status"`, `"doctor"`, `"ping"`, `"poke"`, `"presence"`,
/// `{"request": "typing", "partition": ID}`, `"watch"`, `"author"`, `"faults"` and `"rooms"`. A client may
/// send several requests on one connection; the node answers each in order. Responses carry
/// `"ok": true` and the field named after the request (`peers`, `status`, `doctor`, `pong`,
/// `poke`), or `"ok": false` and `error`. Lines are at most `maxLineBytes`; a longer line gets
/// an error and the connection is closed.
///
/// `poke` is what a command sends after writing the store itself (WAL lets it while a node
/// runs): the node looks for new ops at once and pushes them to its peers, instead of noticing
/// at its next `PRAGMA data_version` check. The answer comes after the ops were handed to the
/// links.
///
/// `watch` turns the connection into an event stream for a user interface in another process:
/// after its response (`"watch": true`) the node writes one `ControlEvent` line per `NodeEvent`
/// until the client closes the connection or the node stops; the client sends nothing more.
///
/// `author` makes the node write one change itself (`{"request": "author", "author": {"kind":
/// "post", "room": "lobby", "text": "hi"}}`, see `AuthorRequest`) and answers its op id, seq and
/// HLC once it is stored and handed to the links: an acknowledged write. It avoids a process per
/// write, which is what the lab needs at rates of hundreds a second. `faults` replaces the faults
/// the node injects (`FaultSettings`; `{}` clears them, no field only reports them).
///
/// Extending it: add a `ControlRequest.Kind` case, its optional arguments to `ControlRequest`,
/// its result field to `ControlResponse`, and a case to `Node.respond(to:)`. Old clients ignore
/// fields they do not know; an old node answers an unknown request with `ok: false`.
public enum ControlProtocol {
    /// The longest line either side accepts.
    public static let maxLineBytes = 1 << 20

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }()

    /// The same without the snake_case conversion, which costs as much as the rest of coding an
    /// `author` request and its answer. A key that is one lowercase word converts to itself, so
    /// for such lines they agree.
    static let wordKeysEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static let wordKeysDecoder = JSONDecoder()

    /// The decoder for `line`: without a `_` byte in it no key has one, and converting a key
    /// without `_` from snake_case leaves it as it is.
    private static func decoder(for line: some Collection<UInt8>) -> JSONDecoder {
        line.contains(UInt8(ascii: "_")) ? decoder : wordKeysDecoder
    }

    /// `value` as one line of JSON (no newline inside, none at the end).
    static func line<T: Encodable>(_ value: T) throws -> [UInt8] {
        Array(try encoder.encode(value))
    }

    /// `response` as one line of JSON, as `line(_:)` writes it.
    static func line(_ response: ControlResponse) throws -> [UInt8] {
        Array(try (response.keysAreWords ? wordKeysEncoder : encoder).encode(response))
    }

    /// The request in one line a client sent (without its newline).
    static func request(from line: [UInt8]) throws -> ControlRequest {
        try decoder(for: line).decode(ControlRequest.self, from: Data(line))
    }

    /// `request` as the bytes a client writes, newline included: for clients that do their own
    /// I/O (the benchmark's pacer).
    public static func requestLine(_ request: ControlRequest) throws -> [UInt8] {
        try line(request) + [UInt8(ascii: "\n")]
    }

    /// The response in one line a client read (without its newline).
    public static func response(from line: some Collection<UInt8>) throws -> ControlResponse {
        try decoder(for: line).decode(ControlResponse.self, from: Data(line))
    }
}

/// One request to the node.
public struct ControlRequest: Codable, Sendable, Equatable {
    /// What is asked.
    public enum Kind: String, Codable, Sendable, CaseIterable {
        /// The peer table (`parley peers`).
        case peers
        /// The node's state (`parley status`).
        case status
        /// What the node sees on the network (`parley doctor`).
        case doctor
        /// Liveness: answers at once.
        case ping
        /// Another process wrote the store: push what is new now.
        case poke
        /// What the links say about each peer's presence (`Node.livePresence`).
        case presence
        /// The user types in `partition` (`Node.typing(in:)`).
        case typing
        /// Stream `NodeEvent`s on this connection from now on.
        case watch
        /// Write one change as this node's user (`author`), and answer its op.
        case author
        /// Set (or, without `faults`, report) the faults the node injects.
        case faults
        /// The room directory (`parley rooms --all`): joined rooms and those linked peers list.
        case rooms
        /// Destroy the keys, remove the data directory's files and stop (`Node.wipe`).
        case wipe
    }

    public var request: Kind
    /// The partition id (base32) of `typing`.
    public var partition: String?
    /// The change to write, for `author`.
    public var author: AuthorRequest?
    /// The faults to inject, for `faults`.
    public var faults: FaultSettings?

    public init(_ request: Kind, partition: String? = nil, author: AuthorRequest? = nil, faults: FaultSettings? = nil) {
        self.request = request
        self.partition = partition
        self.author = author
        self.faults = faults
    }
}

/// One line of a `watch` stream: `{"event": "changed", "partitions": [ID, ...]}`,
/// `{"event": "partitions"}`, `{"event": "typing", "partition": ID, "user": ID}`,
/// `{"event": "presence"}`, `{"event": "peers"}`.
public struct ControlEvent: Codable, Sendable, Equatable {
    public var event: String
    public var partitions: [String]?
    public var partition: String?
    public var user: String?

    public init(_ event: NodeEvent) {
        switch event {
        case .changed(let partitions):
            self.event = "changed"
            self.partitions = partitions.map(\.text).sorted()
        case .partitions: self.event = "partitions"
        case .typing(let partition, let user):
            self.event = "typing"
            (self.partition, self.user) = (partition.text, user.text)
        case .presence: self.event = "presence"
        case .peers: self.event = "peers"
        }
    }

    /// The event this line stands for; nil for a line this version does not know (a newer
    /// node's), which a client skips.
    public var nodeEvent: NodeEvent? {
        switch event {
        case "changed":
            let ids = (partitions ?? []).compactMap { PartitionID(text: $0) }
            return ids.count == (partitions ?? []).count ? .changed(Set(ids)) : nil
        case "partitions": return .partitions
        case "typing":
            guard let partition = partition.flatMap({ PartitionID(text: $0) }), let user = user.flatMap({ UserID(text: $0) }) else { return nil }
            return .typing(partition: partition, user: user)
        case "presence": return .presence
        case "peers": return .peers
        default: return nil
        }
    }
}

/// One peer of `presence`: whether a link to it is up, and when it was last seen (Unix ms).
public struct PresenceReport: Codable, Sendable, Equatable {
    public var id: String
    public var linked: Bool
    public var lastSeen: UInt64?
}

/// The node's answer to one request.
public struct ControlResponse: Codable, Sendable {
    public var ok: Bool
    public var error: String?
    public var peers: [PeerReport]?
    public var status: StatusReport?
    public var doctor: DoctorReport?
    public var pong: PongReport?
    public var poke: PokeReport?
    public var presence: [PresenceReport]?
    /// `typing` and `watch` answer `true`.
    public var typing: Bool?
    public var watch: Bool?
    public var author: AuthorReport?
    public var faults: FaultReport?
    public var rooms: [RoomReport]?
    /// `wipe` answers `true`, then wipes and stops.
    public var wipe: Bool?

    public init(
        ok: Bool = true, error: String? = nil, peers: [PeerReport]? = nil, status: StatusReport? = nil,
        doctor: DoctorReport? = nil, pong: PongReport? = nil, poke: PokeReport? = nil, presence: [PresenceReport]? = nil,
        typing: Bool? = nil, watch: Bool? = nil, author: AuthorReport? = nil, faults: FaultReport? = nil, rooms: [RoomReport]? = nil,
        wipe: Bool? = nil
    ) {
        self.rooms = rooms
        self.wipe = wipe
        self.presence = presence
        self.typing = typing
        self.watch = watch
        self.author = author
        self.faults = faults
        self.ok = ok
        self.error = error
        self.peers = peers
        self.status = status
        self.doctor = doctor
        self.pong = pong
        self.poke = poke
    }

    /// A refusal.
    public static func failure(_ message: String) -> ControlResponse { ControlResponse(ok: false, error: message) }

    /// Whether every key this response has is one lowercase word, as snake_case writes it:
    /// only the reports listed here qualify (a test checks each against the snake_case line).
    var keysAreWords: Bool {
        peers == nil && status == nil && doctor == nil && poke == nil && presence == nil && faults == nil && rooms == nil
    }
}

/// One room of `rooms` (`DirectoryRoom`).
public struct RoomReport: Codable, Sendable, Equatable {
    public var name: String
    public var topic: String
    public var people: Int
    public var joined: Bool
    public var listedBy: Int
}

/// The answer to `ping`.
public struct PongReport: Codable, Sendable, Equatable {
    public var pid: Int32
    public var id: String
}

/// The answer to `poke`.
public struct PokeReport: Codable, Sendable, Equatable {
    /// New ops the node found in its store.
    public var ops: Int
}

/// One peer of `parley peers --json` (docs/DESIGN.md §6.1). Times are Unix milliseconds.
public struct PeerReport: Codable, Sendable, Equatable {
    public var id: String
    public var nick: String?
    /// TCP endpoints, preferred first (`HOST:PORT`).
    public var addresses: [String]
    /// `linked`, `discovered`, `suspect` or `gone`.
    public var state: String
    public var since: UInt64
    public var lastSeen: UInt64?
    /// `inbound`/`outbound` for a linked peer, else nil.
    public var direction: LinkDirection?
    /// `beacon`, `static`, `exchanged` or `link`: how it was first learnt.
    public var origin: String
    /// Listed in the peers file.
    public var isStatic: Bool
}

/// `parley status`. Times are Unix milliseconds.
public struct StatusReport: Codable, Sendable, Equatable {
    public var pid: Int32
    public var startedAt: UInt64
    public var id: String
    public var nick: String?
    public var dataDirectory: String
    /// The bound link address, `HOST:PORT`.
    public var listen: String
    /// nil when discovery is off.
    public var discoveryPort: UInt16?
    public var broadcastTargets: [String]
    public var links: Int
    public var peersKnown: Int
    /// Ops held in the store.
    public var storeOps: Int
    public var sync: SyncStatus
    /// Chains frozen by forks in the store (nil from a node that reports none).
    public var forks: [ForkReport]? = nil
}

/// One chain frozen by a fork (`Forks.chains()`), in `status` and `doctor`: the partition (id,
/// kind and a name for people), the key that signed two ops at `seq`, and its person.
public struct ForkReport: Codable, Sendable, Equatable {
    public var partition: String
    public var kind: String
    public var name: String
    public var author: String
    public var person: String
    public var seq: UInt64

    public init(_ chain: ForkedChain) {
        (partition, kind, name) = (chain.partition.text, chain.kind.description, chain.name)
        (author, person, seq) = (chain.author.text, chain.person.text, chain.seq)
    }
}

/// The sync section of `status`: progress of fetching (also logged), and what crossed each link.
public struct SyncStatus: Codable, Sendable, Equatable {
    /// Ops fetched from peers (answers to this node's WANTs) since start.
    public var fetched: UInt64 = 0
    /// `fetched` plus the ops known to be missing now (counted once, as the most any one peer
    /// shows: peers usually offer the same ones): equal when nothing is left to fetch, so
    /// `fetched / wanted` reads as progress on long work.
    public var wanted: UInt64 = 0
    /// Ops received from peers in any sync message (fetched or pushed), and sent to them.
    public var opsReceived: UInt64 = 0
    public var opsSent: UInt64 = 0
    /// WANTs sent to linked peers whose answer has not fully come.
    public var wantsOutstanding: UInt64 = 0
    /// One entry per linked peer that speaks the sync protocol.
    public var peers: [SyncPeerStatus] = []

    public init() {}
}

/// One linked peer in the sync section of `status`. Counts are for the current link.
public struct SyncPeerStatus: Codable, Sendable, Equatable {
    public var id: String
    public var nick: String?
    /// Ops fetched from this peer, and that plus the ops known to be missing from it.
    public var fetched: UInt64
    public var wanted: UInt64
    public var opsReceived: UInt64
    public var opsSent: UInt64
    /// Chains this peer asked this node to stop pushing (SKIP) on the current link.
    public var skipsReceived: UInt64
    /// The link's bytes on the wire and frames of any type, each way (`LinkTraffic`).
    public var bytesReceived: UInt64
    public var bytesSent: UInt64
    public var framesReceived: UInt64
    public var framesSent: UInt64
    /// `bytesSent` by message type (`LinkMessage.typeName(_:)`), the stream header left out.
    public var bytesSentByType: [String: UInt64]?
    /// When the link became ready (Unix milliseconds).
    public var since: UInt64

    public init(
        id: String, nick: String?, fetched: UInt64, wanted: UInt64, opsReceived: UInt64, opsSent: UInt64,
        skipsReceived: UInt64, traffic: LinkTraffic, since: UInt64
    ) {
        (self.id, self.nick, self.fetched, self.wanted, self.opsReceived, self.opsSent) = (id, nick, fetched, wanted, opsReceived, opsSent)
        self.skipsReceived = skipsReceived
        (bytesReceived, bytesSent, framesReceived, framesSent) = (traffic.bytesReceived, traffic.bytesSent, traffic.framesReceived, traffic.framesSent)
        bytesSentByType = Dictionary(uniqueKeysWithValues: traffic.bytesSentByType.map { (LinkMessage.typeName($0.key), $0.value) })
        self.since = since
    }
}
