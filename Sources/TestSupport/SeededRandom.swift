@_exported import struct Wire.SeededRandom

#if canImport(Glibc)
    import Glibc
#endif

/// Seeds for tests: a failure found by a property test can be replayed from the seed it printed.
extension SeededRandom {
    /// A seed from `PARLEY_SEED` if set (to replay a failure), else a fresh random one.
    public static func seedFromEnvironment() -> UInt64 {
        if let text = getenvString("PARLEY_SEED"), let seed = UInt64(text) { return seed }
        return UInt64.random(in: 0...UInt64.max)
    }

    /// A fresh random seed for `test`, printed so a failure can be replayed.
    public static func announce(_ test: String) -> UInt64 {
        let seed = seedFromEnvironment()
        print("\(test): seed \(seed)")
        return seed
    }
}

func getenvString(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    return String(cString: value)
}
