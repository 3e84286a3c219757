import Gossip

/// Per-link limits on what a peer may send (docs/DESIGN.md §4.2: "per-link rate limits; repeated
/// violations → temporary ban").
///
/// The defaults sit far above what an honest node sends: a node reads a peer's frames only as
/// fast as it handles them, and its own writes and relays are bounded by applying ops (a few
/// thousand a second here, docs/DESIGN.md §9), so only a flood — frames that cost the sender nothing,
/// sent without pause — trips them. A link over either limit is closed as a violation, which
/// counts towards a ban of the peer (`AdmissionConfiguration`).
public struct RateLimitConfiguration: Sendable, Equatable {
    /// Frames a second, sustained (default 20,000).
    public var framesPerSecond: UInt64 = 20_000
    /// Frames allowed at once above the sustained rate (default 100,000: five seconds of relaying
    /// a catch-up at the highest rate this node applies ops).
    public var frameBurst: UInt64 = 100_000
    /// Bytes a second, sustained (default 128 MiB).
    public var bytesPerSecond: UInt64 = 128 << 20
    /// Bytes allowed at once above the sustained rate (default 1 GiB).
    public var byteBurst: UInt64 = 1 << 30

    public init() {}
}

/// Two token buckets, frames and bytes, fed with every frame received on one link, as a pure
/// state machine (times in milliseconds).
public struct RateLimit: Sendable {
    public let configuration: RateLimitConfiguration
    // Tokens in thousandths, so a refill of one millisecond is exact.
    private var frameTokens: UInt64
    private var byteTokens: UInt64
    private var last: UInt64
    private let start: UInt64
    /// What the peer sent, for the line that says why its link was closed.
    private var tally = FrameTally()

    public init(configuration: RateLimitConfiguration, now: UInt64) {
        self.configuration = configuration
        frameTokens = configuration.frameBurst * 1_000
        byteTokens = configuration.byteBurst * 1_000
        last = now
        start = now
    }

    /// Counts one frame (its plaintext) received at `now`. Returns why the peer is over a limit,
    /// with what it sent on the link, or nil.
    public mutating func admit(_ frame: [UInt8], now: UInt64) -> String? {
        let elapsed = min(now > last ? now - last : 0, 3_600_000)
        last = max(last, now)
        tally.count(frame.first)
        frameTokens = min(configuration.frameBurst * 1_000, frameTokens + elapsed * configuration.framesPerSecond)
        byteTokens = min(configuration.byteBurst * 1_000, byteTokens + elapsed * configuration.bytesPerSecond)
        let frameCost: UInt64 = 1_000, byteCost = UInt64(frame.count) * 1_000
        guard frameTokens >= frameCost else {
            return "more than \(configuration.framesPerSecond) frames a second (burst \(configuration.frameBurst)); \(sent)"
        }
        guard byteTokens >= byteCost else {
            return "more than \(configuration.bytesPerSecond) bytes a second (burst \(configuration.byteBurst)); \(sent)"
        }
        frameTokens -= frameCost
        byteTokens -= byteCost
        return nil
    }

    /// "612 frames in 14.2 s: 300 want, 200 vector, 12 ping".
    private var sent: String {
        let age = Double(last - start) / 1_000
        return "\(tally.total) frames in \((age * 10).rounded() / 10) s: \(tally)"
    }
}

/// Frames received on one link, counted by message type: which messages a flood was made of.
/// One counter per type below `other` (every type in use), one for the rest: counted for every
/// frame, so an array, not a dictionary.
struct FrameTally: Sendable, CustomStringConvertible {
    /// The counter of empty frames and of types from 32 on.
    static let other = 0
    private var counts = [UInt64](repeating: 0, count: 32)
    private(set) var total: UInt64 = 0

    /// Counts a frame of type `type` (nil: an empty frame).
    mutating func count(_ type: UInt8?) {
        let index = type.map { Int($0) } ?? Self.other
        counts[index < counts.count ? index : Self.other] += 1
        total += 1
    }

    /// The types sent most, most first (at most five).
    var description: String {
        counts.indices.filter { counts[$0] > 0 }.sorted { (counts[$0], $1) > (counts[$1], $0) }.prefix(5)
            .map { "\(counts[$0]) \(Self.name($0))" }.joined(separator: ", ")
    }

    static func name(_ index: Int) -> String {
        guard index != other else { return "other" }
        let type = UInt8(index)
        return switch type {
        case LinkMessage.LinkType.hello: "hello"
        case LinkMessage.LinkType.ping: "ping"
        case LinkMessage.LinkType.pong: "pong"
        case LinkMessage.LinkType.bye: "bye"
        case LinkMessage.LinkType.addresses: "addresses"
        default: SyncMessageType(rawValue: type).map { "\($0)" } ?? "type \(type)"
        }
    }
}

/// What crossed one link so far: bytes on the wire (encrypted frames and their length prefixes)
/// and frames of any type, each way.
public struct LinkTraffic: Sendable, Equatable, Codable {
    public var bytesReceived: UInt64 = 0
    public var bytesSent: UInt64 = 0
    public var framesReceived: UInt64 = 0
    public var framesSent: UInt64 = 0
    /// `bytesSent` by the type byte of the message each frame carried (the stream header, sent
    /// once, has none): where a link's bytes go (`LinkMessage.typeName(_:)`).
    public var bytesSentByType: [UInt8: UInt64] = [:]

    public init() {}
}
