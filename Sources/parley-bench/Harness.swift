import Foundation

/// Command-line options of the benchmark (small defaults with `--quick`).
struct BenchOptions: Sendable {
    var out = "bench.json"
    var sqliteRows = 200_000
    var posts = 20_000
    var applyOps = 100_000
    /// Ops a node misses before catching up (`catchup_100k_s`, replication).
    var catchupOps = 100_000
    /// Ops in the store of the memory and start-up figures (`rss_1m_ops_mb`, `startup_1m_ops_ms`).
    var bigStoreOps = 1_000_000
    /// Seconds of paced writes per latency cluster, and of the idle window.
    var latencySeconds = 10.0
    /// Writes per second in total in the latency clusters (the issue's figure is 500; a lower
    /// pace measures the CPU a write costs on a cluster that is not saturated).
    var pace = 500
    /// Writes at the pace before the measured window of each latency cluster, their latencies
    /// reported apart (`latency_warmup_p99_ms_N_nodes`): ten processes started together pay
    /// their first writes' cold paths at once, which is start-up, not the steady state.
    var warmupWrites = 100
    var idleSeconds = 60.0
    /// Bytes through secretstream and loopback TCP for the references.
    var referenceBytes = 1 << 30
    /// The `parley` binary the node figures run (default: the one next to this executable).
    var binary: String?
    /// More `parley run` options for every node (experiments: `--run-args '--sync-interval 3600000'`).
    var runArguments: [String] = []
    /// Only the figures whose key contains this text (for profiling one path).
    var only: String?
    /// With it, each latency cluster writes one line per delivery to `PREFIX_<n>_nodes.csv`
    /// (`written_ms,author,receiver,latency_ms`): to see when the slow ones happen.
    var deliveries: String?
    /// Extra work the plain floor cluster spends per write, ms at full speed, spread over the
    /// deliveries (`--floor-extra-ms`): a sweep of it shows the tail this host gives a replica
    /// of the floor's structure as its CPU per write grows.
    var floorExtraMillis = 0.0
    var quick = false

    init(arguments: [String]) {
        var iterator = arguments.makeIterator()
        /// The value after `option`; a missing one is a usage error, not the default in silence.
        /// Only `--run-args` takes a value that starts with `--` (the options it passes on).
        func value(of option: String, optionsInside: Bool = false) -> String {
            guard let value = iterator.next(), optionsInside || !value.hasPrefix("--") else {
                Self.usageError("\(option) needs a value; see --help")
            }
            return value
        }
        while let argument = iterator.next() {
            switch argument {
            case "--out": out = value(of: argument)
            case "--quick":
                quick = true
                (sqliteRows, posts, applyOps, catchupOps, bigStoreOps) = (20_000, 2_000, 10_000, 10_000, 100_000)
                (latencySeconds, idleSeconds, referenceBytes) = (3, 10, 1 << 27)
            case "--only": only = value(of: argument)
            case "--binary": binary = value(of: argument)
            case "--deliveries": deliveries = value(of: argument)
            case "--pace":
                guard let value = iterator.next().flatMap(Int.init), (1...5_000).contains(value) else {
                    Self.usageError("--pace takes writes per second from 1 to 5000")
                }
                pace = value
            case "--warmup":
                guard let value = iterator.next().flatMap(Int.init), (0...100_000).contains(value) else {
                    Self.usageError("--warmup takes a number of writes from 0 to 100000")
                }
                warmupWrites = value
            case "--floor-extra-ms":
                guard let value = iterator.next().flatMap(Double.init), (0...100).contains(value) else {
                    Self.usageError("--floor-extra-ms takes milliseconds per write from 0 to 100")
                }
                floorExtraMillis = value
            case "--run-args": runArguments = value(of: argument, optionsInside: true).split(separator: " ").map(String.init)
            case "--help", "-h":
                print(
                    """
                    usage: parley-bench [--out FILE] [--quick] [--only TEXT[,TEXT…]] [--binary PARLEY] [--run-args 'OPTIONS']
                                       [--deliveries PREFIX] [--pace WRITES_PER_S] [--warmup WRITES] [--floor-extra-ms MS]
                      Measures the write, apply, replication, latency, catch-up, idle, memory, start-up and
                      discovery figures of Parley next to this machine's own limits (SQLite, secretstream,
                      loopback TCP) measured in the same run; prints a table and writes FILE (bench.json).
                      --quick: smaller counts and windows. --only TEXT[,TEXT…]: only the figures whose key contains one of the TEXTs.
                      --binary: the parley executable the node figures start (default: next to parley-bench).
                      --run-args: more `parley run` options for every node (experiments; the figures then
                      no longer measure the defaults).
                      --deliveries: each latency cluster's deliveries to PREFIX_<n>_nodes.csv
                      (written_ms,author,receiver,latency_ms), to see when the slow ones happen;
                      the floor cluster's to PREFIX_floor_<n>_nodes.csv.
                      --pace: writes per second in total in the latency clusters (default 500, the
                      issue's figure; lower, to see the CPU a write costs when nothing queues).
                      --warmup: writes at the pace before each latency cluster's measured window
                      (default 100; their latencies are reported apart, as latency_warmup_p99_ms_N_nodes).
                      The latency figures stand next to a floor cluster of as many processes of this
                      program (--floor-node, started by the bench itself; --only floor runs them alone),
                      and the same floor keeping the rows docs/DESIGN.md asks of each op (floor_design_*).
                      --only floor_at_parley_cpu runs Parley's clusters too: that floor spends their CPU.
                      --floor-extra-ms: the floor cluster also spends MS of fixed work per write, spread
                      over its deliveries (default 0): `--only floor_latency --floor-extra-ms 1.5` shows
                      the tail of a replica that costs 1.5 ms more per write than the floor.
                    """
                )
                exit(0)
            default:
                Self.usageError("unknown option \(argument); see --help")
            }
        }
        checkPaths()
    }

    /// The files a run writes, checked before minutes of measuring: a missing directory found at
    /// the end would lose the run (main.swift checks the `parley` binary the same way).
    private func checkPaths() {
        func checkDirectory(of path: String, option: String) {
            let directory = (path as NSString).deletingLastPathComponent
            let shown = directory.isEmpty ? "." : directory
            guard FileManager.default.isWritableFile(atPath: shown) else {
                Self.usageError("\(option) \(path): the directory '\(shown)' does not exist or is not writable; create it or choose another")
            }
        }
        checkDirectory(of: out, option: "--out")
        if let deliveries { checkDirectory(of: deliveries, option: "--deliveries") }
    }

    /// One line on standard error and exit status 2, as for any usage error.
    static func usageError(_ message: String) -> Never {
        FileHandle.standardError.write(Data("parley-bench: \(message)\n".utf8))
        exit(2)
    }
}

/// One measured figure.
struct BenchResult: Sendable {
    var key: String
    var unit: String
    var value: Double
    var seconds: Double
    /// The raw-machine figure this one is compared with.
    var reference: String?
    /// The issue's target (issue 9), if it sets one.
    var target: Target?
}

/// A target of issue 9: at least or at most a value.
enum Target: Sendable {
    case atLeast(Double)
    case atMost(Double)

    func met(by value: Double) -> Bool {
        switch self {
        case .atLeast(let bound): value >= bound
        case .atMost(let bound): value <= bound
        }
    }

    var text: String {
        switch self {
        case .atLeast(let bound): "≥ " + formatFigure(bound)
        case .atMost(let bound): "≤ " + formatFigure(bound)
        }
    }
}

/// A figure in the table: whole numbers when large, three significant decimals when small;
/// milliseconds always with three decimals (microseconds), so latencies compare at any size.
func formatFigure(_ value: Double, unit: String = "") -> String {
    if value.isNaN { return "n/a" }
    if unit == "ms" { return String(format: "%.3f", value) }
    if abs(value) >= 100 { return String(format: "%.0f", value) }
    if abs(value) >= 1 { return String(format: "%.2f", value) }
    return String(format: "%.3f", value)
}

/// `text` padded with spaces to `width` (on the left with `left`).
func pad(_ text: String, _ width: Int, left: Bool = false) -> String {
    let fill = String(repeating: " ", count: max(0, width - text.count))
    return left ? fill + text : text + fill
}

/// Whether any of `keys` is wanted (`--only`).
func wants(_ keys: String...) -> Bool {
    keys.contains(where: isWanted)
}

/// Whether `key` is wanted: no `--only`, or `key` contains one of its comma-separated texts. The
/// CPU per write of Parley and of the floor are wanted with the floor at Parley's CPU of the same
/// size, which spends their difference.
func isWanted(_ key: String) -> Bool {
    guard let only = options.only else { return true }
    if only.split(separator: ",").contains(where: { key.contains($0) }) { return true }
    return [3, 10].contains { count in
        (key == "paced_cpu_ms_per_write_\(count)_nodes" || key == "floor_cpu_ms_per_write_\(count)_nodes")
            && wantsFloorAtParleyCPU(nodes: count)
    }
}

/// Whether `--only` asks for the floor at Parley's CPU of `count` nodes by its name (a text with
/// `at_parley` in it, so `--only floor` still runs the floors alone): it needs Parley's cluster.
func wantsFloorAtParleyCPU(nodes count: Int) -> Bool {
    guard let only = options.only else { return true }
    let keys = floorKeys(prefix: "floor_at_parley_cpu", nodes: count)
    return only.split(separator: ",").contains { text in text.contains("at_parley") && keys.contains { $0.contains(text) } }
}

/// A figure measured some other way than `measure` (latencies, sizes, times); printed at once.
func record(_ key: String, unit: String, value: Double, seconds: Double = 0, reference: String? = nil, target: Target? = nil) -> BenchResult? {
    guard isWanted(key) else { return nil }
    print("  " + pad(key, 32) + pad(formatFigure(value, unit: unit), 12, left: true) + " " + unit)
    return BenchResult(key: key, unit: unit, value: value, seconds: seconds, reference: reference, target: target)
}

/// Prints a progress line on standard error (long set-ups).
func progress(_ text: String) {
    FileHandle.standardError.write(Data("  … \(text)\n".utf8))
}

/// Runs `body` once and turns `count` items over its wall time into a rate.
func measure(
    _ key: String, unit: String, count: Int, reference: String? = nil, target: Target? = nil, _ body: () throws -> Void
) throws -> BenchResult? {
    try measure(key, unit: unit, count: count, reference: reference, target: target, prepare: {}, body)
}

/// `measure`, with an untimed `prepare` whose result `body` gets: opening a database and
/// creating its schema is not the path being measured.
func measure<Prepared>(
    _ key: String, unit: String, count: Int, reference: String? = nil, target: Target? = nil,
    prepare: () throws -> Prepared, _ body: (Prepared) throws -> Void
) throws -> BenchResult? {
    guard isWanted(key) else { return nil }
    let prepared = try prepare()
    let start = DispatchTime.now().uptimeNanoseconds
    try body(prepared)
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    let result = BenchResult(key: key, unit: unit, value: Double(count) / seconds, seconds: seconds, reference: reference, target: target)
    print("  " + pad(key, 32) + pad(formatFigure(result.value), 12, left: true) + " \(unit)  (\(count) in \(String(format: "%.2f", seconds)) s)")
    return result
}

/// Prints each figure next to its raw-machine reference and its target, and writes one JSON
/// object (every figure by key, references included).
func report(_ results: [BenchResult], jsonPath: String) {
    print("\n| figure | value | reference (same run) | ratio | target | met |\n|---|---:|---|---:|---:|:-:|")
    for r in results {
        var line = "| \(r.key) | \(formatFigure(r.value, unit: r.unit)) \(r.unit) | "
        if let key = r.reference, let base = results.first(where: { $0.key == key }) {
            // A ratio to nothing (a floor of 0 whole milliseconds) is not a figure.
            let ratio = base.value == 0 ? "n/a" : String(format: "%.2f", r.value / base.value) + "×"
            line += "\(key) \(formatFigure(base.value, unit: base.unit)) \(base.unit) | \(ratio) | "
        } else if r.reference != nil {
            line += "(not measured) | | "
        } else {
            line += "| | "
        }
        if let target = r.target {
            line += "\(target.text) | \(target.met(by: r.value) ? "yes" : "**no**") |"
        } else {
            line += "| |"
        }
        print(line)
    }
    for note in hostNotes(results) { print(note) }
    var object: [String: Any] = [:]
    for r in results { object[r.key] = abs(r.value) >= 100 ? (r.value * 10).rounded() / 10 : (r.value * 1000).rounded() / 1000 }
    object["machine_cores"] = ProcessInfo.processInfo.activeProcessorCount
    object["quick"] = options.quick
    let data = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
    guard let data, FileManager.default.createFile(atPath: jsonPath, contents: data) else {
        FileHandle.standardError.write(Data("parley-bench: could not write \(jsonPath); the table above is the run's only copy\n".utf8))
        exit(1)
    }
    print("\nwrote \(jsonPath)")
}

/// A line under the table for each latency target missed, with how often the host slowed the
/// vCPUs in that window (on these machines the tail follows the host, so one run's miss says
/// little without it) and the floor with the design's rows beside Parley's CPU per write (the
/// tail also follows the CPU a write costs).
func hostNotes(_ results: [BenchResult]) -> [String] {
    results.compactMap { result in
        guard result.key.hasPrefix("latency_p99_ms_"), let target = result.target, !target.met(by: result.value) else { return nil }
        let cluster = result.key.dropFirst("latency_p99_ms_".count)  // "3_nodes"
        guard let slowed = results.first(where: { $0.key == "paced_host_slowed_percent_\(cluster)" }) else { return nil }
        let nodes = cluster.prefix { $0.isNumber }
        var quiet = ""
        if let p99 = results.first(where: { $0.key == "quiet_latency_p99_ms_\(cluster)" }),
            let share = results.first(where: { $0.key == "quiet_deliveries_percent_\(cluster)" })
        {
            quiet =
                " Away from the host's slowed runs (\(formatFigure(share.value))% of the deliveries) its p99 was \(formatFigure(p99.value)) ms"
                + " (quiet_latency_p99_ms_\(cluster))."
        }
        var design = ""
        if let p99 = results.first(where: { $0.key == "floor_design_latency_p99_ms_\(cluster)" }),
            let cpu = results.first(where: { $0.key == "floor_design_cpu_ms_per_write_\(cluster)" }),
            let parley = results.first(where: { $0.key == "paced_cpu_ms_per_write_\(cluster)" })
        {
            design =
                " The floor with this design's rows had \(formatFigure(p99.value)) ms at \(formatFigure(cpu.value)) ms of CPU per write,"
                + " Parley \(formatFigure(parley.value)) ms per write (floor_design_*: what Parley's code adds to the design's storage)."
        }
        return "\nnote: \(result.key) missed its target while the host slowed \(formatFigure(slowed.value))% of the probe's runs "
            + "(paced_host_slowed_percent_\(cluster)); the tail follows the host and the CPU a write costs.\(quiet)\(design) "
            + "`make bench-tail NODES=\(nodes)` repeats the cluster and groups its p99 by that share."
    }
}
