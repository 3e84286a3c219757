import Discovery
import Gossip
import Wire

/// One message inside a link frame: the first byte is its type, the rest its body.
///
/// The link layer owns five types; every other type is a sync message and goes, untouched, to
/// the node's `LinkMessageHandler` (the Gossip module's `SyncMessage`: SUMMARY 0x02, VECTOR
/// 0x03, WANT 0x04, OPS 0x05, NEW_OP 0x06, FORK 0x07, …). HELLO carries the sync protocol's
/// fields, and PING/PONG/BYE serve both layers: Gossip has no keepalive or goodbye of its own.
///
/// | type | name      | body (big-endian)                                                     |
/// |-----:|-----------|-----------------------------------------------------------------------|
/// | 0x01 | HELLO     | see `LinkHello`                                                       |
/// | 0x09 | PING      | nonce u64                                                             |
/// | 0x0A | PONG      | the nonce of the PING it answers, u64                                 |
/// | 0x0B | BYE       | reason u8 (`ByeReason`); the FINAL-tagged goodbye frame follows       |
/// | 0x11 | ADDRESSES | a `PeerAddressList` (Discovery's address exchange)                    |
///
/// Rules: HELLO is the first message each way and is sent once; a link-layer message with a
/// malformed body is a protocol violation (the link is closed); bodies of PING, PONG, BYE and
/// ADDRESSES MUST have exactly their length, while HELLO may grow fields at its end.
public enum LinkMessage: Sendable, Equatable {
    case hello(LinkHello)
    case ping(nonce: UInt64)
    case pong(nonce: UInt64)
    case bye(ByeReason)
    case addresses([PeerAddress])
    /// A message of any other type: the sync protocol's.
    case sync(SyncFrame)

    /// Whether this is a sync protocol message (one the store may be written for).
    public var isSync: Bool {
        if case .sync = self { true } else { false }
    }

    /// The type bytes the link layer itself owns.
    public enum LinkType {
        public static let hello: UInt8 = 0x01
        public static let ping: UInt8 = 0x09
        public static let pong: UInt8 = 0x0A
        public static let bye: UInt8 = 0x0B
        public static let addresses: UInt8 = 0x11
        /// Every type the link layer owns; a `SyncFrame` MUST use another.
        public static let all: Set<UInt8> = [hello, ping, pong, bye, addresses]
    }

    /// The name of a message type byte, for traffic reports: a link type's, a sync type's (as
    /// `SyncMessageType` spells it), else the byte in hex.
    public static func typeName(_ type: UInt8) -> String {
        switch type {
        case LinkType.hello: "hello"
        case LinkType.ping: "ping"
        case LinkType.pong: "pong"
        case LinkType.bye: "bye"
        case LinkType.addresses: "addresses"
        default: SyncMessageType(rawValue: type).map { "\($0)" } ?? "0x" + String(type, radix: 16)
        }
    }

    /// The plaintext of the frame that carries this message.
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 16)
        switch self {
        case .hello(let hello):
            writer.u8(LinkType.hello)
            hello.write(to: &writer)
        case .ping(let nonce):
            writer.u8(LinkType.ping)
            writer.u64(nonce)
        case .pong(let nonce):
            writer.u8(LinkType.pong)
            writer.u64(nonce)
        case .bye(let reason):
            writer.u8(LinkType.bye)
            writer.u8(reason.rawValue)
        case .addresses(let list):
            writer.u8(LinkType.addresses)
            writer.raw(PeerAddressList.encode(list))
        case .sync(let frame):
            precondition(!LinkType.all.contains(frame.type), "type \(frame.type) belongs to the link layer")
            writer.u8(frame.type)
            writer.raw(frame.payload)
        }
        return writer.bytes
    }

    /// Decodes a frame's plaintext. Throws for an empty frame and for a malformed link-layer
    /// body; sync bodies are not looked at.
    public init(decoding bytes: [UInt8]) throws(WireDecodingError) {
        guard let type = bytes.first else { throw .truncated(field: "message type") }
        var reader = ByteReader(bytes[1...])
        switch type {
        case LinkType.hello:
            self = .hello(try LinkHello(reading: &reader))
            return  // trailing bytes: fields of a later version
        case LinkType.ping:
            self = .ping(nonce: try reader.u64("ping nonce"))
        case LinkType.pong:
            self = .pong(nonce: try reader.u64("pong nonce"))
        case LinkType.bye:
            self = .bye(ByeReason(rawValue: try reader.u8("bye reason")))
        case LinkType.addresses:
            self = .addresses(try PeerAddressList.decode(Array(bytes[1...])))
            return
        default:
            self = .sync(SyncFrame(type: type, payload: Array(bytes[1...])))
            return
        }
        try reader.expectEnd()
    }
}

/// A sync message as the link carries it: its type byte and its body, for the handler to decode.
public struct SyncFrame: Sendable, Equatable {
    public let type: UInt8
    public let payload: [UInt8]

    /// A frame of `type`, which MUST NOT be one of `LinkMessage.LinkType`'s.
    public init(type: UInt8, payload: [UInt8]) {
        self.type = type
        self.payload = payload
    }
}

/// The first message on a link, each way: who this node is beyond its key.
///
/// | off | len | field                                                               |
/// |----:|----:|---------------------------------------------------------------------|
/// |   0 |   1 | protocol version (1); a link with another version is closed         |
/// |   1 |   8 | instance id: random per process start (a restart replaces a link)   |
/// |   9 |   2 | TCP port the sender listens on (0: it accepts no links)             |
/// |  11 |   1 | n: nick length, 0...64 (0: no nick)                                 |
/// |  12 |   n | nick, UTF-8, from the sender's profile; display only, never trusted  |
/// | 12+n |  10 | the sync protocol's `SyncHello`: version u16, max frame u32, features u32 |
/// | 22+n |   8 | the sender's wall clock, Unix ms u64 (only after the sync fields)   |
/// |  ... |    | later versions append fields here; readers ignore them               |
///
/// There is one HELLO on the wire: the sync protocol (Gossip) has none of its own, and its
/// session starts when the link is ready, with the peer's `sync` fields. A HELLO that ends
/// after the nick comes from a node without the sync protocol (`sync` is nil: no session).
public struct LinkHello: Sendable, Equatable {
    /// The link protocol this code speaks.
    public static let currentVersion: UInt8 = 1
    /// The longest nick carried, in bytes.
    public static let maxNickBytes = 64

    public var version: UInt8
    public var instance: InstanceID
    public var listenPort: UInt16
    public var nick: String?
    /// The sender's sync protocol fields; nil if it sent none.
    public var sync: SyncHello?
    /// The sender's wall clock when it sent the HELLO, Unix milliseconds (after the sync
    /// fields, which it needs): how far apart two nodes' clocks are, for `parley doctor`. Nil
    /// from a sender that gave none.
    public var wallMillis: UInt64?

    public init(
        version: UInt8 = currentVersion, instance: InstanceID, listenPort: UInt16, nick: String?, sync: SyncHello? = nil, wallMillis: UInt64? = nil
    ) {
        self.version = version
        self.instance = instance
        self.listenPort = listenPort
        self.nick = nick.flatMap { $0.isEmpty ? nil : Self.truncated($0) }
        self.sync = sync
        self.wallMillis = sync == nil ? nil : wallMillis
    }

    func write(to writer: inout ByteWriter) {
        writer.u8(version)
        writer.u64(instance.raw)
        writer.u16(listenPort)
        let nickBytes = Array((nick ?? "").utf8)
        writer.u8(UInt8(nickBytes.count))
        writer.raw(nickBytes)
        if let sync {
            writer.u16(sync.protocolVersion)
            writer.u32(sync.maxFrame)
            writer.u32(sync.features)
            if let wallMillis { writer.u64(wallMillis) }
        }
    }

    init(reading reader: inout ByteReader) throws(WireDecodingError) {
        version = try reader.u8("hello version")
        instance = InstanceID(raw: try reader.u64("hello instance"))
        listenPort = try reader.u16("hello port")
        let length = Int(try reader.u8("nick length"))
        guard length <= Self.maxNickBytes else { throw .tooLong(field: "nick", length: length, limit: Self.maxNickBytes) }
        let raw = try reader.raw(length, "nick")
        guard let text = String(validating: raw, as: UTF8.self) else { throw .invalidUTF8(field: "nick") }
        nick = text.isEmpty ? nil : text
        if reader.isAtEnd {
            sync = nil
            wallMillis = nil
        } else {
            sync = SyncHello(
                protocolVersion: try reader.u16("hello sync version"), maxFrame: try reader.u32("hello max frame"),
                features: try reader.u32("hello features"))
            wallMillis = reader.isAtEnd ? nil : try reader.u64("hello wall clock")
        }
    }

    /// `text` cut to at most `maxNickBytes` bytes at a character boundary.
    static func truncated(_ text: String) -> String {
        var result = ""
        for character in text {
            guard result.utf8.count + character.utf8.count <= maxNickBytes else { break }
            result.append(character)
        }
        return result
    }
}

/// Why a link ends (the body of BYE and the goodbye frame's reason byte). Unknown values are
/// kept as they are: a newer peer may have reasons this code does not name.
public struct ByeReason: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The node is shutting down.
    public static let shutdown = ByeReason(rawValue: 0)
    /// Both sides dialed at once; this is the link the tie-break drops (docs/DESIGN.md §4.1).
    public static let duplicate = ByeReason(rawValue: 1)
    /// A newer link from the same identity (a restarted peer) replaces this one.
    public static let replaced = ByeReason(rawValue: 2)
    /// Nothing arrived for the idle timeout.
    public static let idle = ByeReason(rawValue: 3)
    /// The peer broke the link protocol (a malformed message, a second HELLO…).
    public static let protocolViolation = ByeReason(rawValue: 4)
    /// The peer is banned for a while after repeated violations.
    public static let banned = ByeReason(rawValue: 5)
    /// The peer speaks another link protocol version, or a sync protocol this node cannot.
    public static let unsupportedVersion = ByeReason(rawValue: 6)
    /// The peer sent more frames or bytes than the link's rate limit allows (a flood).
    public static let rateLimited = ByeReason(rawValue: 7)
    /// This node could not go on (its store failed); see its log.
    public static let localError = ByeReason(rawValue: 8)
    /// This node keeps enough links (its overlay's bound, or a link swapped for another): the
    /// dialer picks another peer (docs/DESIGN.md §4.1.2).
    public static let overlay = ByeReason(rawValue: 9)

    public var description: String {
        switch self {
        case .shutdown: "shutdown"
        case .duplicate: "duplicate link"
        case .replaced: "replaced by a newer link"
        case .idle: "idle"
        case .protocolViolation: "protocol violation"
        case .banned: "banned"
        case .unsupportedVersion: "unsupported protocol version"
        case .rateLimited: "rate limit exceeded"
        case .localError: "local error"
        case .overlay: "enough links (overlay)"
        default: "reason \(rawValue)"
        }
    }
}
