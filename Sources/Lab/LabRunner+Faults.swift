import Foundation
import NodeRuntime

/// The start or the end of one fault, at a moment of the run.
struct FaultEvent: Sendable {
    let at: Date
    let index: Int
    let isStart: Bool
}

/// Carrying out the fault plan: kills and restarts, pauses, splits (in-app blocks, or bridges
/// with `--netns`), restarts with a skewed clock, lossy pushes, the broken node.
extension LabRunner {
    func faultEvents(start: Date) -> [FaultEvent] {
        var events: [FaultEvent] = []
        for (index, fault) in plan.faults.enumerated() {
            events.append(FaultEvent(at: start.addingTimeInterval(fault.at), index: index, isStart: true))
            if fault.hasEnd { events.append(FaultEvent(at: start.addingTimeInterval(fault.at + fault.duration), index: index, isStart: false)) }
        }
        return events.sorted { ($0.at, $0.isStart ? 1 : 0) < ($1.at, $1.isStart ? 1 : 0) }
    }

    /// Ends the faults still in force when the workload ended, so the cluster can settle.
    func endRemainingFaults() async throws(LabError) {
        for event in pendingEvents where !event.isStart { try await perform(event) }
        pendingEvents = []
    }

    func perform(_ event: FaultEvent) async throws(LabError) {
        let fault = plan.faults[event.index]
        let elapsed = Double(LabNode.nowMillis - startMillis) / 1000
        let node = fault.node.map { nodes[$0] }
        if event.isStart {
            progress.note("fault: \(fault)")
            faultReports.append(
                LabReport.FaultReport(
                    kind: fault.kind.rawValue, spec: fault.description, node: fault.node, startSeconds: elapsed, endSeconds: nil, groups: nil))
        } else {
            progress.note("heal: \(fault.kind.rawValue)" + (fault.node.map { " node \($0)" } ?? ""))
            if let report = faultReports.lastIndex(where: { $0.spec == fault.description && $0.endSeconds == nil }) {
                faultReports[report].endSeconds = elapsed
            }
            lastHealMillis = max(lastHealMillis, LabNode.nowMillis)
        }
        switch (fault.kind, event.isStart) {
        case (.kill, true):
            guard let node else { return }
            _ = await node.sampleWire()
            node.kill(cleanup: cleanup)
            writer.reset(node.index)
        case (.kill, false):
            guard let node, node.state == .stopped else { return }
            try start(node, skew: node.skewMillis)
        case (.pause, true):
            guard let node else { return }
            _ = await node.sampleWire()
            node.pause()
        case (.pause, false):
            guard let node else { return }
            node.resume()
            await node.applyFaults()
        case (.split, true):
            await sampleWire()  // the split closes links: count their bytes first
            try await split(into: fault.groups, report: faultReports.count - 1)
        case (.split, false):
            try await heal()
        case (.skew, true):
            guard let node else { return }
            _ = await node.sampleWire()
            await node.stop(grace: .seconds(3), cleanup: cleanup)
            writer.reset(node.index)
            try start(node, skew: Int64(fault.offsetSeconds * 1000))
        case (.loss, true), (.loss, false):
            for target in node.map({ [$0] }) ?? nodes {
                target.faults.dropRate = event.isStart ? fault.rate : 0
                target.faults.delayMillis = event.isStart ? fault.delayMillis : 0
                await target.applyFaults()
            }
        case (.broken, true):
            guard let node else { return }
            node.faults.dropPartition = workload.rooms[fault.room].partition
            await node.applyFaults()
        case (.skew, false), (.broken, false):
            break
        }
    }

    /// Splits the nodes into `count` groups drawn from the seed. Without namespaces each node is
    /// told to block the others' ids (both sides, so neither dials nor hears the other); with
    /// them the ports of group g move to bridge g.
    private func split(into count: Int, report: Int) async throws(LabError) {
        let order = Array(0..<nodes.count).shuffled(using: &random)
        var groups = Array(repeating: [Int](), count: count)
        for (position, node) in order.enumerated() { groups[position % count].append(node) }
        groups = groups.map { $0.sorted() }
        splitGroups = groups
        if faultReports.indices.contains(report) { faultReports[report].groups = groups }
        if let namespaces {
            for (group, members) in groups.enumerated() where group > 0 {
                for node in members { try await namespaces.plug(node, into: group, logDirectory: logDirectory) }
            }
            return
        }
        for (group, members) in groups.enumerated() {
            let others = groups.enumerated().filter { $0.offset != group }.flatMap(\.element).map { nodes[$0].id }
            for node in members {
                nodes[node].faults.blockedPeers = others
                await nodes[node].applyFaults()
            }
        }
    }

    private func heal() async throws(LabError) {
        if let namespaces {
            for (group, members) in splitGroups.enumerated() where group > 0 {
                for node in members { try await namespaces.plug(node, into: 0, logDirectory: logDirectory) }
            }
        } else {
            for node in nodes {
                node.faults.blockedPeers = nil
                await node.applyFaults()
            }
        }
        splitGroups = []
    }
}
