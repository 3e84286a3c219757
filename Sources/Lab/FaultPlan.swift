import Foundation
import Wire

/// The faults of one lab run: what happens to which node, when, and for how long.
///
/// Written on the command line as `--faults SPEC`: items separated by `;`, each
/// `KIND[:key=value,...]`; times in seconds from the start of the workload.
///
/// | kind | keys (defaults) | what happens |
/// |---|---|---|
/// | `kill` | `node`, `at`, `for` (10% of the run) | `kill -9`, restarted after `for` |
/// | `pause` | `node`, `at`, `for` | SIGSTOP, SIGCONT after `for` (a hung node) |
/// | `split` | `groups` (2), `at`, `for` | the nodes fall into `groups` groups that cannot reach each other |
/// | `skew` | `node`, `at`, `offset` (seconds, ±; 180) | restarted with its clock `offset` off, to the end |
/// | `loss` | `node` (all), `at`, `for`, `rate` (0.3), `delay` (ms, 0) | its live pushes are lost or late |
/// | `broken` | `node`, `room` (0) | test only: the node discards what peers send of room `room` |
///
/// `default` is the schedule used without `--faults` (a kill, a split and a clock skew); `none`
/// injects nothing; `random` or `random:count=N` draws N faults from the seed.
public struct FaultPlan: Sendable, Equatable {
    public var faults: [Fault]

    public init(_ faults: [Fault]) {
        self.faults = faults.sorted { ($0.at, $0.kind.rawValue) < ($1.at, $1.kind.rawValue) }
    }

    /// The moment the last fault that ends has ended, in seconds (0 without any).
    public var lastHeal: Double {
        faults.map { $0.kind == .broken ? 0 : $0.heal }.max() ?? 0
    }
}

/// One fault.
public struct Fault: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, CaseIterable {
        case kill, pause, split, skew, loss, broken
    }

    public var kind: Kind
    /// Seconds from the start of the workload.
    public var at: Double
    /// Seconds it lasts (`skew` and `broken` last to the end: 0 here).
    public var duration: Double
    /// The node it hits (nil: every node, for `loss`; unused by `split`).
    public var node: Int?
    public var groups = 2
    public var offsetSeconds: Double = 180
    public var rate = 0.3
    public var delayMillis: UInt64 = 0
    public var room = 0

    public init(_ kind: Kind, at: Double, duration: Double = 0, node: Int? = nil) {
        (self.kind, self.at, self.duration, self.node) = (kind, at, duration, node)
    }

    /// When it heals: for a kill, pause or split its end; for a skew its start (the node runs
    /// skewed from then on, and the cluster must converge with it).
    public var heal: Double {
        switch kind {
        case .skew, .broken: at
        default: at + duration
        }
    }

    /// Whether it has a window that ends before the run does.
    public var hasEnd: Bool { kind != .skew && kind != .broken }

    public var description: String {
        var parts = ["at=\(Self.format(at))"]
        if hasEnd { parts.append("for=\(Self.format(duration))") }
        if let node { parts.append("node=\(node)") }
        switch kind {
        case .split: parts.append("groups=\(groups)")
        case .skew: parts.append("offset=\(Self.format(offsetSeconds))")
        case .loss:
            parts.append("rate=\(Self.format(rate))")
            if delayMillis > 0 { parts.append("delay=\(delayMillis)") }
        case .broken: parts.append("room=\(room)")
        case .kill, .pause: break
        }
        return "\(kind.rawValue):" + parts.joined(separator: ",")
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%.2f", value)
    }
}

/// Why a fault spec cannot be used; one line naming the problem and the fix.
public struct FaultSpecError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

extension FaultPlan {
    /// Parses `spec` for a run of `nodes` nodes lasting `duration` seconds; `random` and
    /// omitted nodes are drawn from `seed`.
    public static func parse(_ spec: String, nodes: Int, duration: Double, seed: UInt64) throws(FaultSpecError) -> FaultPlan {
        var random = SeededRandom(seed: seed ^ 0xFA17)
        var faults: [Fault] = []
        let items = spec.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !items.isEmpty else { throw FaultSpecError("--faults is empty; write e.g. 'kill:node=1,at=5,for=4' or 'none'") }
        for item in items {
            let (name, rest) = item.firstIndex(of: ":").map { (String(item[..<$0]), String(item[item.index(after: $0)...])) } ?? (item, "")
            var values: [String: String] = [:]
            for pair in rest.split(separator: ",") where !pair.isEmpty {
                let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard parts.count == 2, !parts[0].isEmpty else {
                    throw FaultSpecError("--faults '\(item)': '\(pair)' is not key=value; write e.g. kill:node=1,at=5,for=4")
                }
                values[parts[0]] = parts[1]
            }
            switch name {
            case "none":
                continue
            case "default":
                faults += defaultPlan(nodes: nodes, duration: duration, seed: seed).faults
            case "random":
                let count = try integer(values, "count", in: 1...100, item: item) ?? 4
                faults += randomFaults(count: count, nodes: nodes, duration: duration, random: &random)
            default:
                guard let kind = Fault.Kind(rawValue: name) else {
                    let known = (Fault.Kind.allCases.map(\.rawValue) + ["default", "none", "random"]).joined(separator: ", ")
                    throw FaultSpecError("--faults: unknown fault '\(name)'; use one of \(known)")
                }
                faults.append(try fault(kind, values, item: item, nodes: nodes, duration: duration, random: &random))
            }
        }
        return FaultPlan(faults)
    }

    private static func fault(
        _ kind: Fault.Kind, _ values: [String: String], item: String, nodes: Int, duration: Double, random: inout SeededRandom
    ) throws(FaultSpecError) -> Fault {
        let allowed: Set<String> =
            switch kind {
            case .kill, .pause: ["node", "at", "for"]
            case .split: ["groups", "at", "for"]
            case .skew: ["node", "at", "offset"]
            case .loss: ["node", "at", "for", "rate", "delay"]
            case .broken: ["node", "room"]
            }
        if let unknown = values.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw FaultSpecError("--faults '\(item)': \(kind.rawValue) takes no '\(unknown)'; it takes \(allowed.sorted().joined(separator: ", "))")
        }
        let at = try seconds(values, "at", item: item, limit: duration) ?? (kind == .broken ? 0 : duration * 0.2)
        let length = try seconds(values, "for", item: item, limit: 3_600) ?? (kind.hasWindow ? max(1, duration * 0.1) : 0)
        var fault = Fault(kind, at: at, duration: kind.hasWindow ? length : 0)
        fault.node = try integer(values, "node", in: 0...(nodes - 1), item: item)
        if fault.node == nil, kind != .split, kind != .loss { fault.node = Int.random(in: 0..<nodes, using: &random) }
        if let groups = try integer(values, "groups", in: 2...max(2, nodes), item: item) { fault.groups = groups }
        if kind == .split, nodes < 2 { throw FaultSpecError("--faults '\(item)': a split needs at least 2 nodes") }
        if let text = values["offset"] {
            guard let offset = Double(text), abs(offset) <= 86_400 else {
                throw FaultSpecError("--faults '\(item)': offset must be seconds from -86400 to 86400, e.g. 180 or -120")
            }
            fault.offsetSeconds = offset
        }
        if let text = values["rate"] {
            guard let rate = Double(text), (0...1).contains(rate) else { throw FaultSpecError("--faults '\(item)': rate must be from 0 to 1") }
            fault.rate = rate
        }
        if let delay = try integer(values, "delay", in: 0...60_000, item: item) { fault.delayMillis = UInt64(delay) }
        if let room = try integer(values, "room", in: 0...999, item: item) { fault.room = room }
        return fault
    }

    /// The schedule without `--faults`: a clock skew from 10% of the run, a kill at 20% for 15%,
    /// a split into two groups at 45% for 20%. Everything has healed by 65%, so the remaining
    /// writes and the settle time show the repair. Nodes are drawn from `seed`.
    public static func defaultPlan(nodes: Int, duration: Double, seed: UInt64) -> FaultPlan {
        var random = SeededRandom(seed: seed ^ 0xDEFA)
        let order = Array(0..<nodes).shuffled(using: &random)
        var skew = Fault(.skew, at: duration * 0.1, node: order[0])
        skew.offsetSeconds = random.next() % 2 == 0 ? 180 : -180
        var faults = [skew, Fault(.kill, at: duration * 0.2, duration: duration * 0.15, node: order[nodes > 1 ? 1 : 0])]
        if nodes >= 2 { faults.append(Fault(.split, at: duration * 0.45, duration: duration * 0.2)) }
        return FaultPlan(faults)
    }

    /// `count` faults of random kinds (never `broken`), starting in the first 60% of the run
    /// and lasting 5–20% of it.
    static func randomFaults(count: Int, nodes: Int, duration: Double, random: inout SeededRandom) -> [Fault] {
        let kinds: [Fault.Kind] = nodes >= 2 ? [.kill, .pause, .split, .skew, .loss] : [.kill, .pause, .skew, .loss]
        return (0..<count).map { _ in
            let kind = kinds[Int(random.next() % UInt64(kinds.count))]
            let at = duration * (0.1 + 0.5 * random.unit())
            var fault = Fault(kind, at: at, duration: kind.hasWindow ? duration * (0.05 + 0.15 * random.unit()) : 0)
            if kind != .split { fault.node = Int(random.next() % UInt64(nodes)) }
            if kind == .skew { fault.offsetSeconds = (random.unit() < 0.5 ? -1 : 1) * (60 + 240 * random.unit()).rounded() }
            if kind == .loss { fault.rate = ((0.1 + 0.4 * random.unit()) * 100).rounded() / 100 }
            return fault
        }
    }

    private static func seconds(_ values: [String: String], _ key: String, item: String, limit: Double) throws(FaultSpecError) -> Double? {
        guard let text = values[key] else { return nil }
        let trimmed = text.hasSuffix("s") ? String(text.dropLast()) : text
        guard let value = Double(trimmed), value >= 0, value <= limit else {
            throw FaultSpecError("--faults '\(item)': \(key) must be seconds from 0 to \(Fault.format(limit)), not '\(text)'")
        }
        return value
    }

    private static func integer(_ values: [String: String], _ key: String, in range: ClosedRange<Int>, item: String) throws(FaultSpecError) -> Int? {
        guard let text = values[key] else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw FaultSpecError("--faults '\(item)': \(key) must be a number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return value
    }
}

extension Fault.Kind {
    /// Kinds with a `for` window.
    var hasWindow: Bool { self == .kill || self == .pause || self == .split || self == .loss }
}

/// The lab's seeded generator (`SeededRandom`), so a seed replays the same workload and faults.
extension SeededRandom {
    /// A number in 0..<1.
    public mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
