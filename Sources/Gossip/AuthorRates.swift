import Identity

/// A rate of ops: a token bucket's sustained rate and burst.
public struct OpRate: Hashable, Sendable {
    /// Ops a second, sustained.
    public var perSecond: UInt64
    /// Ops allowed at once above the sustained rate (the bucket's size; it starts full).
    public var burst: UInt64

    public init(perSecond: UInt64, burst: UInt64) {
        (self.perSecond, self.burst) = (perSecond, burst)
    }

    /// A share of a rate, in percent (both the rate and the burst are scaled).
    public struct Share: Hashable, Sendable {
        public var percent: UInt64
        public init(percent: UInt64) {
            precondition((1...100).contains(percent), "a share is 1...100 percent")
            self.percent = percent
        }
    }

    /// This rate scaled by `share`, never below one op.
    public func scaled(by share: Share) -> OpRate {
        OpRate(perSecond: max(1, perSecond * share.percent / 100), burst: max(1, burst * share.percent / 100))
    }
}

/// One token bucket per author, for one direction of one link (times in milliseconds), at most
/// `capacity` authors.
///
/// Live pushes are limited per author and link in both directions: the receiver allows
/// `authorPushRate` (more is a flood), the sender pushes at most `pushPacing` of it. Both buckets
/// start full, so as long as the sender's bucket is smaller and refills slower, the receiver's
/// holds at least the difference of the bursts more than the sender's (2,000 ops by default),
/// which absorbs pushes that arrive bunched after a delay.
///
/// A bucket that has refilled to its burst may be forgotten: it says nothing a new bucket would
/// not. Such buckets are swept out as the table grows, and when it is full. A receiver (`evictsUnrefilled`) then forgets any bucket, which
/// only makes it more lenient. A sender must not: a fresh bucket could let it push more than the
/// receiver still allows, so it takes no new author until one refills (the ops go by WANT).
struct AuthorRates: Sendable {
    let rate: OpRate
    let capacity: Int
    let evictsUnrefilled: Bool

    /// Tokens in thousandths, so a refill of one millisecond is exact.
    private struct Bucket: Sendable {
        var tokens: UInt64
        var last: UInt64
    }

    private var buckets: [UserID: Bucket] = [:]
    private var lastSweep: UInt64?
    /// The table's size at which a new author's bucket first sweeps out refilled ones: twice
    /// what the last sweep left (at least 16), so the table holds about the authors pushing
    /// now, not every author ever pushed, at O(1) per new bucket.
    private var sweepAt = 16

    init(rate: OpRate, capacity: Int, evictsUnrefilled: Bool) {
        (self.rate, self.capacity, self.evictsUnrefilled) = (rate, capacity, evictsUnrefilled)
    }

    /// Authors tracked now.
    var count: Int { buckets.count }

    /// Takes one op's token for `author` at `now`: false when the author is over the rate (or,
    /// for a sender, when no bucket can be made for it).
    mutating func take(_ author: UserID, now: UInt64) -> Bool {
        let full = rate.burst * 1_000
        var bucket: Bucket
        if let known = buckets[author] {
            bucket = known
            let elapsed = min(now > bucket.last ? now - bucket.last : 0, 3_600_000)
            bucket.tokens = min(full, bucket.tokens + elapsed * rate.perSecond)
            bucket.last = max(bucket.last, now)
        } else {
            if buckets.count >= sweepAt {
                sweepRefilled(now: now)
                sweepAt = max(16, 2 * buckets.count)
            }
            guard makeRoom(now: now) else { return false }
            bucket = Bucket(tokens: full, last: now)
        }
        guard bucket.tokens >= 1_000 else {
            buckets[author] = bucket
            return false
        }
        bucket.tokens -= 1_000
        buckets[author] = bucket
        return true
    }

    /// Frees a place for a new bucket if the table is full: whether there is one now. Sweeps for
    /// refilled buckets at most every 100 ms, so a stream of new authors costs O(1) each.
    private mutating func makeRoom(now: UInt64) -> Bool {
        guard buckets.count >= capacity else { return true }
        if lastSweep.map({ now >= $0 + 100 }) ?? true {
            sweepRefilled(now: now)
            if buckets.count < capacity { return true }
        }
        guard evictsUnrefilled, let victim = buckets.first?.key else { return false }
        buckets[victim] = nil
        return true
    }

    /// Forgets the buckets that have refilled to their burst (a new one would be the same).
    private mutating func sweepRefilled(now: UInt64) {
        lastSweep = now
        let full = rate.burst * 1_000
        buckets = buckets.filter { _, bucket in
            let elapsed = min(now > bucket.last ? now - bucket.last : 0, 3_600_000)
            return bucket.tokens + elapsed * rate.perSecond < full
        }
    }
}
