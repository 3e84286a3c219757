/// A small, fast, seeded random number generator (SplitMix64): the same seed gives the same
/// numbers, so a simulated run or a property test replays exactly from its seed. Not for keys
/// or nonces (libsodium makes those).
public struct SeededRandom: RandomNumberGenerator, Sendable, Equatable {
    public let seed: UInt64
    private var state: UInt64

    public init(seed: UInt64) {
        self.seed = seed
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<bound` (0 when `bound` is 0).
    public mutating func next(below bound: UInt64) -> UInt64 {
        bound == 0 ? 0 : next() % bound
    }

    /// A random element, nil for none.
    public mutating func element<T>(of items: [T]) -> T? {
        items.isEmpty ? nil : items[Int(next(below: UInt64(items.count)))]
    }

    /// True with probability `p`.
    public mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }
}
