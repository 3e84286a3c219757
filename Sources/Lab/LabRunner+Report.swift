import Foundation

/// Judging the run and writing `report.json` and `report.html`.
extension LabRunner {
    func makeReport(convergedAt: UInt64?, diverged: [String]) -> LabReport {
        let times = nodes.map { StoreReader.receivedTimes(path: $0.dataDirectory + "/parley.db") }
        let nodes = self.nodes
        let now = LabNode.nowMillis
        let seconds = Int((Double(LabNode.nowMillis - startMillis) / 1000).rounded(.up))
        let verdict = DeliveryVerdict.evaluate(
            writes: writes, nodes: nodes.count, startMillis: startMillis, seconds: seconds, holders: { self.holders(of: $0) },
            holderSince: { self.workload.holder($0, since: $1) },
            applied: { node, write in times[node][write.id].map { nodes[node].realMillis(fromStored: $0, now: now) } })
        let settleFrom = max(lastHealMillis, lastAckMillis, startMillis)
        let wireBytes = nodes.reduce(UInt64(0)) { $0 + $1.wireBytesSent }
        // Each op a node holds but did not write (carried ones included) came over a link once
        // at least: what arrived beyond that is the copies.
        let opsReceived = nodes.reduce(UInt64(0)) { $0 + $1.opsReceived }
        let receipts = times.reduce(0) { $0 + $1.count } - Set(times.flatMap(\.keys)).count
        let bounds = Statistics.latencyBounds()
        let workloadSeconds = configuration.duration
        return LabReport(
            converged: convergedAt != nil,
            convergenceSeconds: convergedAt.map { Double($0 >= settleFrom ? $0 - settleFrom : 0) / 1000 },
            acknowledgedWrites: writes.count, lostWrites: verdict.lost.count, refusedWrites: refused, skippedWrites: skipped,
            latencyMs: LabReport.latency(verdict.latenciesMillis),
            opsPerSecond: Double(writes.count) / workloadSeconds,
            deliveries: verdict.deliveries, deliveriesPerSecond: Double(verdict.deliveries) / workloadSeconds,
            wireBytes: wireBytes, wireBytesPerOp: verdict.deliveries > 0 ? Double(wireBytes) / Double(verdict.deliveries) : 0,
            copiesPerOp: receipts > 0 ? Double(opsReceived) / Double(receipts) : 0,
            wireBytesPerOpByType: nodes.reduce(into: [String: UInt64]()) { $0.merge($1.wireBytesSentByType, uniquingKeysWith: +) }
                .mapValues { verdict.deliveries > 0 ? Double($0) / Double(verdict.deliveries) : 0 },
            nodes: nodes.map { node in
                LabReport.NodeReport(
                    index: node.index, name: node.name, id: node.id, peakRssBytes: node.peakRSS, cpuSeconds: node.cpuSeconds, starts: node.starts,
                    clockSkewMs: node.skewMillis, writesAcknowledged: writes.filter { $0.node == node.index }.count, address: node.address,
                    deviceOf: configuration.person(ofDevice: node.index))
            },
            faults: faultReports, forks: nodes.reduce(0) { $0 + StoreReader.forkedChains(path: $1.dataDirectory + "/parley.db") },
            divergedPartitions: diverged,
            lostSample: verdict.lost.prefix(20).map { lost in
                LabReport.LostWrite(
                    id: lost.write.id, partition: lost.write.partition, kind: lost.write.kind, writtenBy: lost.write.node, missingOn: lost.missingOn)
            },
            configuration: LabReport.Configuration(
                nodes: configuration.nodes, durationSeconds: configuration.duration, rate: configuration.rate, seed: configuration.seed,
                rooms: configuration.rooms, conversations: configuration.conversations, devices: configuration.devices, netns: configuration.netns,
                faults: plan.faults.map(\.description).joined(separator: ";"), settleTimeoutSeconds: configuration.settleTimeout,
                command: configuration.command),
            deliveredPerSecond: verdict.deliveredPerSecond,
            latencyHistogram: LabReport.Histogram(boundsMs: bounds, counts: Statistics.histogram(verdict.latenciesMillis, bounds: bounds)),
            lastRefusal: lastRefusal, error: nil)
    }

    func write(_ report: LabReport) throws(LabError) {
        do {
            try report.json().write(to: URL(fileURLWithPath: configuration.out + "/report.json"))
            try Data(ReportPage.html(report).utf8).write(to: URL(fileURLWithPath: configuration.out + "/report.html"))
        } catch {
            throw .failure("cannot write the report into \(configuration.out): \(error.localizedDescription)")
        }
    }
}
