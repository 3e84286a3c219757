/// A hybrid logical clock timestamp: 48 bits of Unix milliseconds, then a 16-bit counter
/// (docs/DESIGN.md §3.4). Ordered as an integer, so `(hlc, author, seq)` is a total order.
public struct HLC: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let raw: UInt64
    public init(raw: UInt64) { self.raw = raw }
    public init(wallMillis: UInt64, counter: UInt16) { raw = wallMillis << 16 | UInt64(counter) }
    public var wallMillis: UInt64 { raw >> 16 }
    public var counter: UInt16 { UInt16(truncatingIfNeeded: raw) }
    public static func < (a: HLC, b: HLC) -> Bool { a.raw < b.raw }
    public var description: String { "\(wallMillis).\(counter)" }
}

/// The node's hybrid logical clock: local events never go backwards, and a received timestamp
/// pulls the clock forward at most `maxDrift` beyond the wall clock, so a peer with a wild clock
/// cannot drag everyone into the future.
///
/// A replica holds an op stamped more than `maxLeadMillis` ahead of its own clock until its
/// clock is that close (`RuleViolation.stampedAhead`, docs/ARCHITECTURE.md, *Stamps from the
/// future*): a stamp of the year 2100 never becomes the newest message anywhere.
public struct HybridClock: Sendable {
    /// How far a remote timestamp may pull the local clock ahead of the wall clock.
    public static let maxDriftMillis: UInt64 = 60_000
    /// How far ahead of a replica's wall clock an op's stamp may be when it is applied. Clocks a
    /// few minutes apart (a laptop in the field without time sync, the lab's 3-minute skew)
    /// still exchange ops at once; a stamp further ahead would sort a message out of its place
    /// for longer than a turn of a conversation, so it waits.
    public static let maxLeadMillis: UInt64 = 5 * 60_000

    /// Whether an op stamped `stamp` must wait at a replica whose wall clock reads `nowMillis`.
    public static func isAhead(_ stamp: HLC, of nowMillis: UInt64) -> Bool {
        stamp.wallMillis > nowMillis &+ maxLeadMillis
    }

    public private(set) var last: HLC

    public init(last: HLC = HLC(raw: 0)) { self.last = last }

    /// The timestamp for a new local op at wall time `nowMillis`.
    public mutating func tick(nowMillis: UInt64) -> HLC {
        if nowMillis > last.wallMillis {
            last = HLC(wallMillis: nowMillis, counter: 0)
        } else if last.counter == UInt16.max {
            last = HLC(wallMillis: last.wallMillis + 1, counter: 0)  // counter overflow: borrow the next millisecond
        } else {
            last = HLC(raw: last.raw + 1)
        }
        return last
    }

    /// Folds in a timestamp received from a peer (capped at `now + maxDrift`).
    public mutating func observe(_ remote: HLC, nowMillis: UInt64) {
        let cap = HLC(wallMillis: nowMillis + Self.maxDriftMillis, counter: UInt16.max)
        let bounded = min(remote, cap)
        if bounded > last { last = bounded }
    }
}
