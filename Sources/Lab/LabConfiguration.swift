import Foundation

/// What `parley lab run` was asked to do. `validate()` checks it like command-line input.
public struct LabConfiguration: Sendable {
    public var nodes = 4
    /// Seconds of workload.
    public var duration = 20.0
    /// Writes per second, over the whole cluster.
    public var rate = 10.0
    public var seed: UInt64 = 1
    /// Where the report, the logs and (during the run) the data directories go.
    public var out: String
    /// `--faults`; nil: `FaultPlan.defaultPlan`.
    public var faultSpec: String?
    public var rooms = 3
    public var conversations = 2
    /// Nodes that are paired devices of another node's person (the last `devices` nodes; node
    /// `persons + k` is a device of node `k % persons`).
    public var devices = 0
    public var netns = false
    /// Every node's overlay size (`parley run --active-peers`); nil: the full mesh.
    public var activePeers: Int?
    /// Every node pushes along the broadcast tree (`parley run --push-tree`).
    public var pushTree = false
    /// How long to wait for convergence after the last heal and the last write.
    public var settleTimeout = 60.0
    /// Keep the nodes' data directories after the run (else they are removed).
    public var keepData = false
    /// The `parley` binary for the nodes (default: the running one).
    public var binary: String?
    /// The command line, for the report.
    public var command = ""

    public init(out: String) {
        self.out = out
    }

    /// The nodes that are persons of their own (the first ones).
    public var persons: Int { nodes - devices }

    /// The person node whose device node `index` is, or nil for a person.
    public func person(ofDevice index: Int) -> Int? {
        index >= persons ? (index - persons) % persons : nil
    }

    /// The fault plan, parsed (the default one without `--faults`).
    public func faultPlan() throws(LabError) -> FaultPlan {
        guard let spec = faultSpec else { return FaultPlan.defaultPlan(nodes: nodes, duration: duration, seed: seed) }
        do {
            return try FaultPlan.parse(spec, nodes: nodes, duration: duration, seed: seed)
        } catch {
            throw .usage(error.description)
        }
    }

    /// Checks every value; the error names the option and the range.
    public func validate() throws(LabError) {
        guard (1...64).contains(nodes) else { throw .usage("--nodes must be from 1 to 64, not \(nodes)") }
        guard duration >= 1, duration <= 3_600 else { throw .usage("--duration must be seconds from 1 to 3600, not \(duration)") }
        guard rate > 0, rate <= 5_000 else { throw .usage("--rate must be writes per second from 0.1 to 5000, not \(rate)") }
        guard (1...50).contains(rooms) else { throw .usage("--rooms must be from 1 to 50, not \(rooms)") }
        guard (0...50).contains(conversations) else { throw .usage("--conversations must be from 0 to 50, not \(conversations)") }
        guard (0..<nodes).contains(devices) else { throw .usage("--devices must be from 0 to \(nodes - 1) (one node at least is a person), not \(devices)") }
        if conversations > 0, persons < 2 {
            throw .usage("--conversations needs at least 2 nodes that are not devices; use --conversations 0 or fewer --devices")
        }
        guard settleTimeout >= 1, settleTimeout <= 3_600 else { throw .usage("--settle-timeout must be seconds from 1 to 3600") }
        guard !out.isEmpty else { throw .usage("--out needs a directory") }
        let plan = try faultPlan()
        for fault in plan.faults where fault.kind == .broken && fault.room >= rooms {
            throw .usage("--faults: broken room=\(fault.room) but there are only \(rooms) rooms (0 to \(rooms - 1))")
        }
        if let activePeers {
            guard (2...64).contains(activePeers) else { throw .usage("--active-peers must be from 2 to 64, not \(activePeers)") }
        }
        if netns, let reason = Namespaces.unavailableReason() { throw .usage(reason) }
    }
}
