import Discovery
import Gossip
import Identity
import TestSupport
import Testing
import Wire

@testable import LinkProtocol

@Suite struct LinkMessageTests {
    static let messages: [LinkMessage] = [
        .hello(LinkHello(instance: InstanceID(raw: 0x0102_0304_0506_0708), listenPort: 7748, nick: "alice")),
        .hello(LinkHello(instance: InstanceID(raw: 1), listenPort: 0, nick: nil)),
        .hello(LinkHello(instance: InstanceID(raw: 2), listenPort: 1, nick: "zoë 🦊")),
        .hello(LinkHello(instance: InstanceID(raw: 3), listenPort: 2, nick: "bob", sync: GossipConfiguration().hello)),
        .hello(LinkHello(instance: InstanceID(raw: 4), listenPort: 3, nick: nil, sync: SyncHello(protocolVersion: 9, maxFrame: 1, features: 7))),
        .ping(nonce: 0), .ping(nonce: .max), .pong(nonce: 42),
        .bye(.shutdown), .bye(.duplicate), .bye(ByeReason(rawValue: 200)),
        .addresses([]),
        .addresses([PeerAddress(peer: Fixtures.identity(1).id, endpoint: PeerEndpoint(host: "10.77.0.2", port: 7748))]),
        .sync(SyncFrame(type: 0x02, payload: [1, 2, 3])), .sync(SyncFrame(type: 0x06, payload: [])),
        .sync(SyncFrame(type: 0xFF, payload: [0])),
    ]

    @Test(arguments: messages) func roundTrip(_ message: LinkMessage) throws {
        #expect(try LinkMessage(decoding: message.encoded) == message)
    }

    @Test func layout_typeByteFirst() {
        #expect(LinkMessage.ping(nonce: 1).encoded == [0x09, 0, 0, 0, 0, 0, 0, 0, 1])
        #expect(LinkMessage.pong(nonce: 2).encoded == [0x0A, 0, 0, 0, 0, 0, 0, 0, 2])
        #expect(LinkMessage.bye(.idle).encoded == [0x0B, 3])
        let hello = LinkMessage.hello(LinkHello(instance: InstanceID(raw: 5), listenPort: 0x1E44, nick: "ab")).encoded
        #expect(hello == [0x01, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0x1E, 0x44, 2, 0x61, 0x62])
    }

    @Test func hello_carriesTheSyncFieldsAtItsEnd_andIgnoresFieldsAppendedByALaterVersion() throws {
        let sync = SyncHello(protocolVersion: 1, maxFrame: 0x0010_0000, features: 5)
        let hello = LinkHello(instance: InstanceID(raw: 9), listenPort: 1, nick: "x", sync: sync, wallMillis: 0x0102_0304)
        let bytes = LinkMessage.hello(hello).encoded
        #expect(Array(bytes.suffix(18)) == [0, 1, 0, 0x10, 0, 0, 0, 0, 0, 5] + [0, 0, 0, 0, 1, 2, 3, 4])
        #expect(try LinkMessage(decoding: bytes + [7, 7, 7]) == .hello(hello))
        // A HELLO of a node that sends no clock ends after the sync fields.
        let clockless = LinkHello(instance: InstanceID(raw: 9), listenPort: 1, nick: "x", sync: sync)
        #expect(try LinkMessage(decoding: LinkMessage.hello(clockless).encoded) == .hello(clockless))
        // A HELLO that ends after the nick: a node without the sync protocol.
        let bare = LinkHello(instance: InstanceID(raw: 9), listenPort: 1, nick: "x")
        #expect(try LinkMessage(decoding: LinkMessage.hello(bare).encoded) == .hello(bare))
        #expect(bare.sync == nil)
    }

    @Test func hello_cutsLongNicksAtACharacterBoundary() {
        let hello = LinkHello(instance: InstanceID(raw: 1), listenPort: 1, nick: String(repeating: "é", count: 40))
        #expect(hello.nick?.utf8.count == 64)
        #expect(LinkHello(instance: InstanceID(raw: 1), listenPort: 1, nick: "").nick == nil)
    }

    static let malformed: [(String, [UInt8])] = [
        ("empty frame", []),
        ("short ping", [0x09, 1, 2, 3]),
        ("long ping", [0x09, 0, 0, 0, 0, 0, 0, 0, 1, 9]),
        ("pong without nonce", [0x0A]),
        ("bye without reason", [0x0B]),
        ("bye with extra bytes", [0x0B, 0, 0]),
        ("truncated hello", [0x01, 1, 0, 0]),
        ("hello nick past the end", [0x01, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 1, 9, 0x61]),
        ("hello nick over 64 bytes", [0x01, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 1, 65] + [UInt8](repeating: 0x61, count: 65)),
        ("hello nick not UTF-8", [0x01, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 1, 1, 0xFF]),
        ("hello with cut-short sync fields", [0x01, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 1, 0, 0, 1, 0]),
        ("addresses of another version", [0x11, 9, 0]),
    ]

    @Test func malformedLinkMessages_throw() {
        for (name, bytes) in Self.malformed {
            #expect(throws: WireDecodingError.self, "\(name)") { try LinkMessage(decoding: bytes) }
        }
    }

    @Test func syncTypes_passThroughUntouched() throws {
        for type in UInt8(0)...UInt8(255) where !LinkMessage.LinkType.all.contains(type) {
            #expect(try LinkMessage(decoding: [type, 0xEE]) == .sync(SyncFrame(type: type, payload: [0xEE])))
        }
    }

    /// A link closed for a flood names what the peer sent, so a log says whether it was a
    /// hostile stream or an honest protocol's burst.
    @Test func aFlood_isReportedWithTheMessagesThePeerSent() {
        var configuration = RateLimitConfiguration()
        (configuration.framesPerSecond, configuration.frameBurst) = (10, 20)
        var limit = RateLimit(configuration: configuration, now: 1_000)
        var verdicts: [String?] = []
        for _ in 0..<3 { verdicts.append(limit.admit(LinkMessage.ping(nonce: 1).encoded, now: 1_000)) }
        for _ in 0..<2 { verdicts.append(limit.admit([SyncMessageType.vector.rawValue, 0], now: 1_200)) }
        for _ in 0..<17 { verdicts.append(limit.admit([SyncMessageType.want.rawValue], now: 2_500)) }
        // A burst of 20 and 10 a second: 5 frames spent, 2 refilled, then 13 more (the bucket
        // is full again at 20) before 17 frames spend all but 3.
        #expect(verdicts.allSatisfy { $0 == nil }, "\(verdicts)")
        let flood = limit.admit([0xEE], now: 2_500)
        #expect(flood == nil)
        var last: String?
        for _ in 0..<20 where last == nil { last = limit.admit([SyncMessageType.want.rawValue], now: 2_500) }
        #expect(last == "more than 10 frames a second (burst 20); 26 frames in 1.5 s: 20 want, 3 ping, 2 vector, 1 other")
    }
}

extension LinkMessage: CustomTestStringConvertible {
    public var testDescription: String { "\(self)".prefix(60).description }
}
