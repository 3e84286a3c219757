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
            reportOf[event.index] = faultReports.count
            faultReports.append(
                LabReport.FaultReport(
                    kind: fault.kind.rawValue, spec: fault.description, node: fault.node, startSeconds: elapsed, endSeconds: nil, groups: nil))
        } else {
            progress.note("heal: \(fault.kind.rawValue)" + (fault.node.map { " node \($0)" } ?? ""))
            if let report = reportOf[event.index] { faultReports[report].endSeconds = elapsed }
            lastHealMillis = max(lastHealMillis, LabNode.nowMillis)
        }
        switch (fault.kind, event.isStart) {
        case (.kill, true):
            guard let node else { return }
            activeDown[node.index, default: []].insert(event.index)
            _ = await node.sampleWire()
            node.kill(cleanup: cleanup)
            writer.reset(node.index)
        case (.kill, false):
            guard let node else { return }
            activeDown[node.index]?.remove(event.index)
            guard activeDown[node.index]?.isEmpty != false, node.state == .stopped else { return }
            try start(node, skew: node.skewMillis)
        case (.pause, true):
            guard let node else { return }
            activePause[node.index, default: []].insert(event.index)
            _ = await node.sampleWire()
            node.pause()
        case (.pause, false):
            guard let node else { return }
            activePause[node.index]?.remove(event.index)
            guard activePause[node.index]?.isEmpty != false, node.state == .paused else { return }
            node.resume()
            await node.applyFaults()
        case (.split, true):
            await sampleWire()  // the split closes links: count their bytes first
            activeSplits[event.index] = drawGroups(fault.groups)
            if let report = reportOf[event.index] { faultReports[report].groups = activeSplits[event.index] }
            try await applySplits()
        case (.split, false):
            activeSplits[event.index] = nil
            try await applySplits()
        case (.skew, true):
            guard let node else { return }
            if activeDown[node.index]?.isEmpty == false {
                node.skewMillis = Int64(fault.offsetSeconds * 1000)  // killed: it comes back skewed
                return
            }
            _ = await node.sampleWire()
            await node.stop(grace: .seconds(3), cleanup: cleanup)
            writer.reset(node.index)
            try start(node, skew: Int64(fault.offsetSeconds * 1000))
        case (.loss, true):
            activeLoss[event.index] = fault
            await applyLoss()
        case (.loss, false):
            activeLoss[event.index] = nil
            await applyLoss()
        case (.broken, true):
            guard let node else { return }
            node.faults.dropPartition = workload.rooms[fault.room].partition
            await node.applyFaults()
        case (.skew, false), (.broken, false):
            break
        }
    }

    /// `count` groups of nodes drawn from the seed, as even as can be.
    private func drawGroups(_ count: Int) -> [[Int]] {
        let order = Array(0..<nodes.count).shuffled(using: &random)
        var groups = Array(repeating: [Int](), count: count)
        for (position, node) in order.enumerated() { groups[position % count].append(node) }
        return groups.map { $0.sorted() }
    }

    /// Makes the network match the splits in force. Two nodes reach each other when they are in
    /// the same group of every split (overlapping splits refine each other), so each node gets a
    /// cell: nodes of one cell are connected, of different cells not. Without namespaces each
    /// node blocks every node of another cell (both sides, so neither dials nor hears the other);
    /// with them each cell has its bridge (the cell of node 0 keeps `br0`).
    func applySplits() async throws(LabError) {
        let cell = Self.cells(of: activeSplits.keys.sorted().map { activeSplits[$0]! }, nodes: nodes.count)
        if let namespaces {
            for node in nodes.indices where bridgeOf[node] != cell[node] {
                while bridgeCount <= cell[node] {
                    try await namespaces.addBridge(bridgeCount, logDirectory: logDirectory)
                    bridgeCount += 1
                }
                try await namespaces.plug(node, into: cell[node], logDirectory: logDirectory)
                bridgeOf[node] = cell[node]
            }
            return
        }
        for node in nodes {
            let others = nodes.filter { cell[$0.index] != cell[node.index] }.map(\.id)
            let blocked = others.isEmpty ? nil : others
            guard node.faults.blockedPeers != blocked else { continue }
            node.faults.blockedPeers = blocked
            await node.applyFaults()
        }
    }

    /// The cell of each node under `splits` (each a list of groups): nodes share a cell when they
    /// share a group in every split. Cells are numbered by their first node, so node 0 is in 0.
    static func cells(of splits: [[[Int]]], nodes: Int) -> [Int] {
        var numbers: [[Int]: Int] = [:]
        return (0..<nodes).map { node in
            let key = splits.map { groups in groups.firstIndex { $0.contains(node) } ?? 0 }
            if let known = numbers[key] { return known }
            numbers[key] = numbers.count
            return numbers.count - 1
        }
    }

    /// Gives every node the loss and delay of the lossy periods in force that hit it (the worst
    /// of each, when they overlap).
    func applyLoss() async {
        for node in nodes {
            let hitting = activeLoss.values.filter { $0.node == nil || $0.node == node.index }
            let rate = hitting.map(\.rate).max() ?? 0, delay = hitting.map(\.delayMillis).max() ?? 0
            guard node.faults.dropRate ?? 0 != rate || node.faults.delayMillis ?? 0 != delay else { continue }
            node.faults.dropRate = rate
            node.faults.delayMillis = delay
            await node.applyFaults()
        }
    }
}
