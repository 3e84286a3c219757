import Discovery
import Foundation
import Identity
import SecureLink
import TestSupport
import Testing
import Transport
import Wire

@testable import NodeRuntime

extension NodeProcessTests.AbuseProcessTests {
    // MARK: 9. Log flood

    /// Issue 39: every log line the network can cause is rate-limited (`LogLimiter`). Forged
    /// beacons that carry the victim's own identity, each with a fresh instance id, each made
    /// the node warn "another process … runs with this node's identity": 36,457 lines (5.7 MB)
    /// in 10 s. Now a real `parley run` under 6 s of them writes at most the limiter's lines and
    /// one summary line that counts the rest.
    @Test func forgedBeaconsWithTheNodesOwnIdentity_writeABoundedLog_withASummary() async throws {
        // Slot 20 again: the suite is serialized, and the beacon flood case is done by now.
        let cluster = NodeCluster(slot: 20)
        defer { cluster.shutdown() }
        let victim = try await cluster.node("victim")
        try await victim.start(cluster.loopbackArguments)
        let victimID = try #require(UserID(text: victim.id))
        let process = try #require(victim.process)
        let linesBefore = process.stderr.split(separator: "\n").count

        // From 127.0.0.10 (loopback sources skip the per-source beacon limit, so the victim reads
        // as many as it can), under the default network key, for 6 s in bursts of 200.
        let udp = try UDPSocket(host: "127.0.0.10", port: 0, broadcast: false)
        defer { udp.close() }
        let target = try SocketAddress(ipAddress: "127.0.0.1", port: cluster.discoveryPort)
        let key = BeaconKey(networkKey: NetworkKey(deploymentSecret: nil).bytes)
        var sent = 0
        let start = ContinuousClock.now
        while ContinuousClock.now < start + .seconds(6) {
            for _ in 0..<200 {
                let beacon = Beacon(tcpPort: 9, instanceID: .random(), identity: victimID, seq: 1, interval: 1_000)
                if (try? await udp.send(beacon.encoded(key: key), to: target)) != nil { sent += 1 }
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        let floodEnd = ContinuousClock.now

        // The summary comes when the limiter's 10 s window closes, within a second after.
        let summarized = await poll(timeout: .seconds(20)) { process.stderr.contains("not shown: ") }
        let doctor = await Self.doctor(of: victim)
        let log = process.stderr
        let lines = log.split(separator: "\n").dropFirst(linesBefore)
        let warnings = lines.filter { $0.contains("runs with this node's identity") }.count
        let summary = lines.first { $0.contains("not shown: ") }.map(String.init) ?? "none"
        print(
            "AbuseProcessTests [log flood]: sent \(sent) forged beacons with the victim's identity in "
                + "\(AbuseScene.Latencies.ms(floodEnd - start)) ms; the victim read \(doctor?.beacons.duplicateIdentity ?? 0) and "
                + "wrote \(lines.count) log lines (\(lines.reduce(0) { $0 + $1.utf8.count + 1 }) bytes), \(warnings) of them the "
                + "warning; summary: \(summary)")
        #expect((doctor?.beacons.duplicateIdentity ?? 0) >= 1_000, "the flood was too small to mean anything")
        #expect(lines.count < 100, "the victim wrote \(lines.count) lines under the flood")
        #expect(warnings >= 1 && warnings <= 10, "\(warnings) warnings about the duplicate identity")
        #expect(summarized && summary.contains("'duplicate identity'"), "no summary line:\n\(lines.suffix(5).joined(separator: "\n"))")
        #expect(process.isRunning, "the victim died\n\(log)")
    }

    /// `parley doctor` of a running node, through its control socket.
    static func doctor(of node: TestNode) async -> DoctorReport? {
        guard let client = try? ControlClient.connect(dataDirectory: node.dataDir) else { return nil }
        defer { client.close() }
        return try? await client.send(ControlRequest(.doctor)).doctor
    }
}
