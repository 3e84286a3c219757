/// Percentiles and histograms of the lab's measurements (pure, for the report and its tests).
public enum Statistics {
    /// The `p`-th percentile (0…100) of `values` by the nearest-rank method: the smallest value
    /// with at least p% of the values at or below it. Nil for no values.
    public static func percentile(_ p: Double, of values: [Double]) -> Double? {
        percentile(p, ofSorted: values.sorted())
    }

    /// `percentile(_:of:)` for values already sorted ascending.
    public static func percentile(_ p: Double, ofSorted sorted: [Double]) -> Double? {
        guard !sorted.isEmpty else { return nil }
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }

    /// Counts of `values` in logarithmic buckets (bounds in the same unit, ascending): bucket i
    /// holds values in `bounds[i-1] ..< bounds[i]`, the first everything below `bounds[0]`, and a
    /// last one everything from the last bound on. So `counts.count == bounds.count + 1`.
    public static func histogram(_ values: [Double], bounds: [Double]) -> [Int] {
        var counts = Array(repeating: 0, count: bounds.count + 1)
        for value in values {
            let index = bounds.firstIndex { value < $0 } ?? bounds.count
            counts[index] += 1
        }
        return counts
    }

    /// Bucket bounds for latencies in milliseconds: 1, 2, 5, 10, 20, 50 ... up to `limit`.
    public static func latencyBounds(upTo limit: Double = 120_000) -> [Double] {
        var bounds: [Double] = []
        var decade = 1.0
        while decade <= limit {
            for step in [1.0, 2.0, 5.0] where decade * step <= limit { bounds.append(decade * step) }
            decade *= 10
        }
        return bounds
    }
}
