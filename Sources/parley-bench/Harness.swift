import Foundation

/// Command-line options of the benchmark (small defaults with `--quick`).
struct BenchOptions {
    var out = "bench.json"
    var sqliteRows = 200_000
    var posts = 20_000
    var applyOps = 100_000
    /// Only the figures whose key contains this text (for profiling one path).
    var only: String?

    init(arguments: [String]) {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--out": out = iterator.next() ?? out
            case "--quick": (sqliteRows, posts, applyOps) = (20_000, 2_000, 10_000)
            case "--only": only = iterator.next()
            case "--help", "-h":
                print(
                    "usage: parley-bench [--out FILE] [--quick] [--only TEXT]\n  Prints local posts/s, ops applied/s and the raw SQLite insert rate; writes FILE (bench.json)."
                )
                exit(0)
            default:
                FileHandle.standardError.write(Data("parley-bench: unknown option \(argument); see --help\n".utf8))
                exit(2)
            }
        }
    }
}

/// One measured figure.
struct BenchResult {
    var key: String
    var unit: String
    var value: Double
    var seconds: Double
    /// The raw-machine figure this one is compared with.
    var reference: String?
}

/// Runs `body` once and turns `count` items over its wall time into a rate.
func measure(_ key: String, unit: String, count: Int, reference: String? = nil, _ body: () throws -> Void) throws -> BenchResult? {
    if let only = options.only, !key.contains(only) { return nil }
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    let result = BenchResult(key: key, unit: unit, value: Double(count) / seconds, seconds: seconds, reference: reference)
    print(String(format: "  %-28@ %12.0f %@  (%d in %.2f s)", key as NSString, result.value, unit as NSString, count, seconds))
    return result
}

/// Prints each figure next to its raw-machine reference and writes one JSON object.
func report(_ results: [BenchResult], jsonPath: String) {
    print("\n| figure | value | reference (same run) | ratio |\n|---|---:|---|---:|")
    for r in results {
        if let key = r.reference, let base = results.first(where: { $0.key == key }) {
            print(
                String(
                    format: "| %@ | %.0f %@ | %@ %.0f | %.2f× |", r.key as NSString, r.value, r.unit as NSString, key as NSString, base.value,
                    r.value / base.value))
        } else {
            print(String(format: "| %@ | %.0f %@ | (machine limit) | |", r.key as NSString, r.value, r.unit as NSString))
        }
    }
    var object: [String: Any] = [:]
    for r in results { object[r.key] = (r.value * 10).rounded() / 10 }
    object["machine_cores"] = ProcessInfo.processInfo.activeProcessorCount
    if let data = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys]) {
        _ = FileManager.default.createFile(atPath: jsonPath, contents: data)
        print("\nwrote \(jsonPath)")
    }
}
