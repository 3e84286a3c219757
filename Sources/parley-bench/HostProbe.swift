import Foundation
import Glibc
import Synchronization

/// Watches how fast this machine's CPUs run while a cluster is measured: every 5 ms, on a thread
/// of its own, it runs 50 µs of `SpinWork` and divides the thread CPU time it took by its
/// full-speed time. Preemption does not count (thread CPU time), and the guest's steal is
/// subtracted from it (paravirtual time accounting), yet on this host the work takes 10–15× as long
/// for 50–150 ms, every 1.3–1.8 s, even with the machine idle: the host runs the vCPU slowly.
/// Those episodes are the bursts in the latency tails (docs/BENCHMARKS.md, *Reading the figures on a shared 2-core host*).
/// It costs 1% of one core.
final class HostProbe: Sendable {
    /// One probe run: when (wall clock, ms) and how many times its full-speed CPU time it took.
    struct Sample: Sendable {
        let wallMillis: Int64
        let slowdown: Double
    }

    /// A probe run this many times slower than full speed is a slowed one.
    static let slowedFactor = 4.0
    /// Slowed runs closer than this (ms) belong to one episode.
    static let episodeGapMillis: Int64 = 200

    private let samples = Mutex<[Sample]>([])
    private let stopping = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)

    /// Calibrates and starts the probe thread.
    init() {
        let rate = SpinWork.iterationsPerNano()
        let iterations = Int(50_000 * rate)
        let fullSpeedNanos = Double(iterations) / rate
        let thread = Thread { [self] in
            var next = Pacer.monotonicNanos()
            while !stopping.load(ordering: .acquiring) {
                next += 5_000_000
                Pacer.sleep(until: next)
                let before = SpinWork.threadCPUNanos()
                SpinWork.run(iterations: iterations)
                let took = Double(SpinWork.threadCPUNanos() - before)
                let sample = Sample(wallMillis: Int64(Date().timeIntervalSince1970 * 1_000), slowdown: took / fullSpeedNanos)
                samples.withLock { $0.append(sample) }
            }
            stopped.store(true, ordering: .releasing)
        }
        thread.name = "parley-bench host probe"
        thread.start()
    }

    /// Stops the probe (waits for its last run) and returns what it saw.
    func stop() -> [Sample] {
        stopping.store(true, ordering: .releasing)
        while !stopped.load(ordering: .acquiring) { usleep(1_000) }
        return samples.withLock { $0 }
    }

    /// The share of runs slowed at least `slowedFactor` times, in percent.
    static func slowedPercent(_ samples: [Sample]) -> Double {
        guard !samples.isEmpty else { return 0 }
        return Double(samples.count { $0.slowdown >= slowedFactor }) * 100 / Double(samples.count)
    }

    /// Episodes of slowed runs per minute of probing.
    static func episodesPerMinute(_ samples: [Sample]) -> Double {
        guard let first = samples.first, let last = samples.last, last.wallMillis > first.wallMillis else { return 0 }
        var episodes = 0
        var lastSlowed: Int64?
        for sample in samples where sample.slowdown >= slowedFactor {
            if lastSlowed.map({ sample.wallMillis - $0 > episodeGapMillis }) ?? true { episodes += 1 }
            lastSlowed = sample.wallMillis
        }
        return Double(episodes) * 60_000 / Double(last.wallMillis - first.wallMillis)
    }

    /// A delivery is *quiet* when no slowed run falls within this many milliseconds of its
    /// interval, from the write to its apply: one probe period, the longest a slowdown that
    /// touches the interval can go unseen.
    static let quietMarginMillis: Int64 = 5

    /// When the slowed runs happened (wall clock, ms), in order: what `isQuiet` searches.
    static func slowedTimes(_ samples: [Sample]) -> [Int64] {
        samples.filter { $0.slowdown >= slowedFactor }.map(\.wallMillis).sorted()
    }

    /// Whether no slowed run (`slowedTimes`) lies within `quietMarginMillis` of `from...to`.
    /// Conservative both ways it can err: a delivery held up by a backlog the host left behind
    /// counts as quiet once the episode is over, and so does one the host slowed on the other
    /// vCPU, which the probe's thread did not run on.
    static func isQuiet(from: Int64, to: Int64, slowedTimes: [Int64]) -> Bool {
        let low = from - quietMarginMillis
        let high = to + quietMarginMillis
        // The first slowed run at or after `low`; quiet unless it is at or before `high`.
        var (start, end) = (0, slowedTimes.count)
        while start < end {
            let middle = (start + end) / 2
            if slowedTimes[middle] < low { start = middle + 1 } else { end = middle }
        }
        return start == slowedTimes.count || slowedTimes[start] > high
    }

    /// The samples as CSV (`wall_ms,slowdown`), for lining them up with the deliveries' files.
    static func csv(_ samples: [Sample]) -> String {
        "wall_ms,slowdown\n" + samples.map { "\($0.wallMillis)," + String(format: "%.2f", $0.slowdown) + "\n" }.joined()
    }
}
