import Foundation
import NodeRuntime
import Subprocess

/// One node of the lab: its data directory, its identity and its `parley run` processes, and
/// what the lab measured of it. Used only from the runner's task.
// @unchecked: the `var`s are touched by one task at a time: the runner's, or one child task it awaits.
public final class LabNode: @unchecked Sendable {
    public enum State: Equatable {
        case stopped
        /// Started; not yet answering on its control socket.
        case starting
        case running
        /// SIGSTOP (a `pause` fault).
        case paused
    }

    public let index: Int
    public let name: String
    public let dataDirectory: String
    public var id = ""
    public private(set) var state = State.stopped
    public private(set) var process: ChildProcess?
    private(set) var starts = 0
    private var client: ControlClient?
    /// The clock skew of the current process (or of the next one, for a node that is down), and
    /// each process's (real start time, skew), so `received_at` can be read back in real time.
    var skewMillis: Int64 = 0
    private(set) var skewHistory: [(fromMillis: UInt64, skew: Int64)] = [(0, 0)]
    public private(set) var peakRSS: UInt64 = 0
    private(set) var address: String?
    /// The largest bytes-sent seen per (process, peer, link start): links are summed at the end.
    private var wire: [String: UInt64] = [:]
    /// The same by message type, per link.
    private var wireByType: [String: [String: UInt64]] = [:]
    /// The same for the ops received on each link (new or duplicate).
    private var received: [String: UInt64] = [:]
    /// The faults this node should inject now (re-sent after every start).
    var faults = FaultSettings()

    public init(index: Int, root: String) {
        self.index = index
        name = String(format: "node%02d", index)
        dataDirectory = root + "/" + name
    }

    public var isUp: Bool { state == .running }
    public var pid: Int32? { process?.pid }
    /// What the running process printed so far.
    public var stdout: String { process?.stdout ?? "" }

    /// Starts `parley run`; `launcher` runs it inside a namespace.
    public func start(
        binary: String, arguments: [String], launcher: [String], environment: [String: String], skew: Int64, logDirectory: String,
        cleanup: LabCleanup
    ) throws(LabError) {
        precondition(state == .stopped, "invalid state \(state)")
        // Lab nodes serve no web UI unless asked for one (on a port of its own): twenty nodes
        // would all try 127.0.0.1:7749.
        let all = ["--data-dir", dataDirectory, "run"] + arguments + (arguments.contains("--web") ? [] : ["--no-web"])
        var env = environment
        if skew != 0 { env["PARLEY_CLOCK_SKEW_MS"] = String(skew) }
        do {
            let child = try ChildProcess(
                executable: launcher.first ?? binary, arguments: launcher.isEmpty ? all : Array(launcher.dropFirst()) + [binary] + all,
                environment: env, captureIn: logDirectory, name: "\(name)-run\(starts)")
            cleanup.track(child)
            process = child
        } catch {
            throw .failure("cannot start \(binary) for \(name): \(error)")
        }
        starts += 1
        skewMillis = skew
        skewHistory.append((Self.nowMillis, skew))
        state = .starting
    }

    /// For a node starting: whether it answers now (then it is running). Throws when the
    /// process died.
    public func checkStarted() async throws(LabError) -> Bool {
        guard state == .starting, let process else { return state == .running }
        guard process.isRunning else {
            let log = process.stderr.split(separator: "\n").suffix(3).joined(separator: " | ")
            throw .failure("\(name) exited during start: \(log)")
        }
        guard let client = try? ControlClient.connect(dataDirectory: dataDirectory),
            let status = try? await client.send(ControlRequest(.status), timeout: .seconds(2)).status
        else { return false }
        self.client = client
        address = status.listen
        state = .running
        return true
    }

    /// `kill -9`; the store keeps every committed op (WAL).
    func kill(cleanup: LabCleanup) {
        guard let process, state != .stopped else { return }
        if state == .paused { process.kill(SIGCONT) }
        sampleRSS()
        process.kill(SIGKILL)
        cleanup.forget(process)
        dropClient()
        state = .stopped
    }

    /// SIGTERM and up to `grace` for a graceful stop, then SIGKILL.
    public func stop(grace: Duration, cleanup: LabCleanup) async {
        guard let process, state != .stopped else { return }
        if state == .paused { process.kill(SIGCONT) }
        sampleRSS()
        process.kill(SIGTERM)
        if !(await process.waitForExit(timeout: grace)) { process.kill(SIGKILL) }
        cleanup.forget(process)
        dropClient()
        state = .stopped
    }

    func pause() {
        guard state == .running, let process else { return }
        sampleRSS()
        process.kill(SIGSTOP)
        state = .paused
    }

    func resume() {
        guard state == .paused, let process else { return }
        process.kill(SIGCONT)
        state = .running
    }

    private func dropClient() {
        client?.close()
        client = nil
    }

    /// How many of `nodes` report a link to every other one (`status`, each asked in turn).
    public static func fullyLinkedCount(_ nodes: [LabNode]) async -> Int {
        var linked = 0
        for node in nodes {
            if let status = await node.send(ControlRequest(.status), timeout: .seconds(3))?.status, status.links >= nodes.count - 1 { linked += 1 }
        }
        return linked
    }

    /// Sends `request` (within `timeout`); nil when the node is not up or did not answer, after
    /// which a new connection is made for the next request.
    public func send(_ request: ControlRequest, timeout: Duration = .seconds(5)) async -> ControlResponse? {
        guard state == .running else { return nil }
        if client == nil { client = try? ControlClient.connect(dataDirectory: dataDirectory) }
        guard let client else { return nil }
        do {
            return try await client.send(request, timeout: timeout)
        } catch {
            dropClient()
            return nil
        }
    }

    /// Records the process's peak RSS so far.
    public func sampleRSS() {
        guard let pid = process?.pid, let bytes = LabProcess.peakRSS(of: pid) else { return }
        peakRSS = max(peakRSS, bytes)
        if let seconds = LabProcess.cpuSeconds(of: pid) { cpu[pid] = seconds }
    }

    /// CPU seconds (user and system) per process, as last sampled.
    private var cpu: [Int32: Double] = [:]
    /// CPU seconds this node's processes used, as last sampled (with its RSS).
    public var cpuSeconds: Double { cpu.values.reduce(0, +) }

    /// Records the bytes each link has sent and the ops it received (`status`).
    public func sampleWire() async -> StatusReport? {
        guard let status = await send(ControlRequest(.status), timeout: .seconds(3))?.status else { return nil }
        for peer in status.sync.peers {
            let key = "\(status.pid)/\(peer.id)/\(peer.since)"
            wire[key] = max(wire[key] ?? 0, peer.bytesSent)
            received[key] = max(received[key] ?? 0, peer.opsReceived)
            for (type, bytes) in peer.bytesSentByType ?? [:] { wireByType[key, default: [:]][type] = max(wireByType[key]?[type] ?? 0, bytes) }
        }
        return status
    }

    /// Bytes this node sent on all its links so far (as last sampled).
    public var wireBytesSent: UInt64 { wire.values.reduce(0, +) }
    /// `wireBytesSent` by message type (the streams' headers left out).
    public var wireBytesSentByType: [String: UInt64] {
        wireByType.values.reduce(into: [:]) { total, link in total.merge(link, uniquingKeysWith: +) }
    }
    /// Ops this node received on all its links so far, duplicates included (as last sampled).
    public var opsReceived: UInt64 { received.values.reduce(0, +) }

    /// Sends the faults this node should inject; false when it did not take them.
    @discardableResult
    func applyFaults() async -> Bool {
        await send(ControlRequest(.faults, faults: faults), timeout: .seconds(3))?.ok == true
    }

    /// `received_at` of this node's store (its skewed clock) in real Unix milliseconds, `now`
    /// being the end of the run: the process whose skew puts the value inside its own lifetime.
    func realMillis(fromStored stored: UInt64, now: UInt64) -> UInt64 {
        Self.realMillis(fromStored: stored, history: skewHistory, now: now)
    }

    /// `realMillis` for a history of (real start, skew) per process, oldest first.
    static func realMillis(fromStored stored: UInt64, history: [(fromMillis: UInt64, skew: Int64)], now: UInt64) -> UInt64 {
        var until = now
        for (from, skew) in history.reversed() {
            let real = skew >= 0 ? stored &- UInt64(skew) : stored &+ skew.magnitude
            if real >= from, real <= until { return real }
            until = from
        }
        return stored
    }

    public static var nowMillis: UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }
}
