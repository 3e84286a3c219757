/// A seeded random number generator (SplitMix64): the same seed gives the same run, so a
/// failure found by a property test can be replayed. Tests print the seed when they fail.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    public let seed: UInt64
    private var state: UInt64

    public init(seed: UInt64) {
        self.seed = seed
        state = seed
    }

    /// A seed from `PARLEY_SEED` if set (to replay a failure), else a fresh random one.
    public static func seedFromEnvironment() -> UInt64 {
        if let text = getenvString("PARLEY_SEED"), let seed = UInt64(text) { return seed }
        return UInt64.random(in: 0...UInt64.max)
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A fresh random seed for `test`, printed so a failure can be replayed.
    public static func announce(_ test: String) -> UInt64 {
        let seed = seedFromEnvironment()
        print("\(test): seed \(seed)")
        return seed
    }

    /// True with probability `p`.
    public mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }
}

#if canImport(Glibc)
    import Glibc
#endif

func getenvString(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    return String(cString: value)
}
