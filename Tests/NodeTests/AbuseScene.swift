import Foundation
import Identity
import Replica
import Store
import TestSupport
import Testing

@testable import NodeRuntime

/// One abuse case's stage (issue 10): a victim `parley run` and an honest `parley run` linked to
/// it, both real processes on 127.0.0.1, and the measurements the cases report — the honest
/// pair's message latency during the attack, the victim's memory, and its admission report.
///
/// The victim runs with `--ban-loopback`, so an attacker on another loopback address (127.0.0.7,
/// …) is capped and banned like a LAN host while the honest node, on 127.0.0.1, is not touched by
/// those bans; a 2 s handshake deadline; pings every 2 s (a link is idle only after 6 s of
/// silence, so a busy machine does not drop it by itself). Its discovery port is the cluster's
/// own, and only it listens there (the honest node dials it from a peers file, with
/// `--no-discovery`): beacons sent to it reach nobody else.
final class AbuseScene: Sendable {
    let cluster: NodeCluster
    let victim: TestNode
    let honest: TestNode
    /// The victim's TCP port (on 127.0.0.1).
    let port: UInt16
    let victimID: UserID
    let honestID: UserID
    /// The victim's handshake deadline.
    static let handshakeTimeout: Duration = .seconds(2)
    static let timing = ["--ping-interval", "2000", "--sync-interval", "1000"]

    init(_ cluster: NodeCluster, victimOptions: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        self.cluster = cluster
        victim = try await cluster.node("victim", sourceLocation: sourceLocation)
        honest = try await cluster.node("honest", sourceLocation: sourceLocation)
        try await victim.start(
            [
                "--listen", "127.0.0.1:0", "--broadcast", "127.255.255.255", "--discovery-port", "\(cluster.discoveryPort)",
                "--join", "lobby", "--ban-loopback", "--handshake-timeout", "2000",
            ] + Self.timing + victimOptions, sourceLocation: sourceLocation)
        let peers = try await honest.writePeersFile([victim], in: cluster.root, sourceLocation: sourceLocation)
        try await honest.start(
            ["--listen", "127.0.0.1:0", "--no-discovery", "--peers", peers, "--join", "lobby"] + Self.timing, sourceLocation: sourceLocation)
        let address = try #require(await victim.listenAddress(), sourceLocation: sourceLocation)
        port = try #require(address.split(separator: ":").last.flatMap { UInt16($0) }, sourceLocation: sourceLocation)
        victimID = try #require(UserID(text: victim.id), sourceLocation: sourceLocation)
        honestID = try #require(UserID(text: honest.id), sourceLocation: sourceLocation)
        let linked = await poll(timeout: .seconds(15)) { await self.victim.lists([self.honest], as: "linked") }
        try #require(linked, "the honest node did not link to the victim\n\(cluster.logs)", sourceLocation: sourceLocation)
    }

    // MARK: Honest latency

    /// Message latencies of the honest pair, and the victim's largest resident set seen meanwhile.
    struct Latencies: CustomStringConvertible {
        var samples: [Duration] = []
        /// Messages that did not reach the victim within the deadline.
        var lost = 0
        var maxRSSKiB = 0
        /// The most unauthenticated connections the victim reported at one time (its doctor).
        var maxUnauthenticated = 0

        var p50: Duration { samples.sorted()[samples.count / 2] }
        var max: Duration { samples.max() ?? .zero }

        var description: String {
            guard !samples.isEmpty else { return "no honest message arrived (\(lost) lost)" }
            return "honest latency p50 \(Self.ms(p50)) ms, max \(Self.ms(max)) ms over \(samples.count) messages"
                + (lost > 0 ? ", \(lost) LOST" : "")
        }

        static func ms(_ duration: Duration) -> String {
            String(format: "%.1f", Double(duration.components.attoseconds) / 1e15 + Double(duration.components.seconds) * 1_000)
        }
    }

    /// Writes messages on the honest node (the control socket's `author`, as the lab does) one
    /// after another, and times each from the write until the victim's store holds it (polled
    /// every 5 ms, at most `deadline`); keeps going until `done` is set, and for at least
    /// `minimum` messages. Messages are 100 ms apart, so they spread over the attack.
    func honestLatencies(until done: Flag, minimum: Int = 8, deadline: Duration = .seconds(20)) async throws -> Latencies {
        let client = try ControlClient.connect(dataDirectory: honest.dataDir)
        defer { client.close() }
        let store = try NodeStore.open(victim.dataDir)
        defer { store.database.close() }
        var result = Latencies()
        var index = 0
        while index < minimum || !done.isSet, index < 400 {
            index += 1
            let start = ContinuousClock.now
            let response = try await client.send(
                ControlRequest(.author, author: AuthorRequest(kind: "post", room: "lobby", text: "honest \(index)")), timeout: deadline)
            let seq = try #require(response.author?.seq, "the honest node did not write: \(response.error ?? "?")")
            let arrived = await poll(timeout: deadline, interval: .milliseconds(5)) {
                let heads = (try? store.log.heads(lobby.id)) ?? []
                return heads.contains { $0.author == self.honestID && $0.maxSeq >= seq }
            }
            if arrived { result.samples.append(ContinuousClock.now - start) } else { result.lost += 1 }
            result.maxRSSKiB = Swift.max(result.maxRSSKiB, memory().rssKiB)
            result.maxUnauthenticated = Swift.max(result.maxUnauthenticated, await doctor()?.admission.unauthenticated ?? 0)
            try await Task.sleep(for: .milliseconds(100))
        }
        return result
    }

    // MARK: The victim's state

    /// The victim's resident set now and its high-water mark, in KiB (/proc/PID/status).
    func memory() -> (rssKiB: Int, peakKiB: Int) {
        guard let pid = victim.process?.pid,
            let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        else { return (0, 0) }
        func field(_ name: String) -> Int {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
        }
        return (field("VmRSS"), field("VmHWM"))
    }

    /// What the honest node's sync counted (its `status`), for a failure that says why its link
    /// was dropped: a victim that cut it for a flood saw more frames than its few a second.
    func honestSyncTotals() async -> String {
        guard let client = try? ControlClient.connect(dataDirectory: honest.dataDir) else { return "honest: no control socket" }
        defer { client.close() }
        guard let sync = try? await client.send(ControlRequest(.status)).status?.sync else { return "honest: no status" }
        return "honest sent \(sync.opsSent) ops and received \(sync.opsReceived), fetched \(sync.fetched) of \(sync.wanted)"
    }

    /// The victim's `parley doctor` report, through its control socket.
    func doctor() async -> DoctorReport? {
        guard let client = try? ControlClient.connect(dataDirectory: victim.dataDir) else { return nil }
        defer { client.close() }
        return try? await client.send(ControlRequest(.doctor)).doctor
    }

    /// Waits (at most 10 s) until the victim counted `count` violations in all: the point after
    /// which a case's next attempt meets the ban that the last violation may have started, not
    /// a race with the victim's bookkeeping.
    func awaitViolations(_ count: UInt64) async {
        await poll(timeout: .seconds(10), interval: .milliseconds(20)) { (await self.doctor()?.admission.violations ?? 0) >= count }
    }

    /// The ops of `author` in the lobby that the victim stores (its chain's length).
    func victimLobbySeq(of author: UserID) -> UInt64 {
        guard let store = try? NodeStore.open(victim.dataDir) else { return 0 }
        defer { store.database.close() }
        return (try? store.log.heads(lobby.id))?.first { $0.author == author }?.maxSeq ?? 0
    }

    /// The victim's log so far.
    var victimLog: String { victim.runs.map(\.stderr).joined() }

    /// Checks what every case must show afterwards, and prints the figures: every honest message
    /// arrived, the honest link is still up, the victim still runs, and its memory grew by less
    /// than `memoryBound` MiB over its resident set before the attack.
    func report(
        _ name: String, latencies: Latencies, before: (rssKiB: Int, peakKiB: Int), memoryBound: Int = 64,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async -> DoctorReport? {
        let after = memory()
        let doctor = await doctor()
        let admission = doctor?.admission
        print(
            "AbuseProcessTests [\(name)]: \(latencies); victim RSS before \(before.rssKiB / 1024) MiB, "
                + "peak \(Swift.max(after.peakKiB, latencies.maxRSSKiB) / 1024) MiB (during \(latencies.maxRSSKiB / 1024) MiB); "
                + "refused \(admission?.refused ?? 0), violations \(admission?.violations ?? 0), "
                + "banned hosts \(admission?.bannedHosts.sorted() ?? []), banned peers \(admission?.bannedPeers.count ?? 0)")
        #expect(latencies.lost == 0 && !latencies.samples.isEmpty, "honest messages were lost: \(latencies)", sourceLocation: sourceLocation)
        #expect(victim.process?.isRunning == true, "the victim died\n\(cluster.logs)", sourceLocation: sourceLocation)
        let honestLinked = await victim.lists([honest], as: "linked")
        let honestSent = honestLinked ? "" : await honestSyncTotals()
        #expect(honestLinked, "the honest link was dropped (\(honestSent))\n\(cluster.logs)", sourceLocation: sourceLocation)
        let growth = (Swift.max(after.peakKiB, latencies.maxRSSKiB) - before.rssKiB) / 1024
        #expect(growth < memoryBound, "the victim grew by \(growth) MiB", sourceLocation: sourceLocation)
        return doctor
    }
}
