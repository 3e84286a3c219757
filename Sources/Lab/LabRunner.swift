import Foundation
import NodeRuntime
import Replica
import Subprocess
import Wire

/// One run of the convergence lab: starts the nodes, drives the workload while the faults
/// come and go, waits for the cluster to settle, and judges it (docs/DESIGN.md §1: "people who test
/// convergence").
///
/// Everything happens on one task in one loop, so the order of writes and faults follows the
/// clock and the seed, and the lab needs no locks: each turn carries out the fault events that
/// are due, the writes that are due (at most a batch, so a slow cluster cannot starve the
/// rest), the nodes that finished starting, the samples (RSS every second, link bytes every two)
/// and the progress line. What the lab started is registered with `cleanup`, which kills and
/// deletes it at the end or on a signal.
// @unchecked: the `var`s are touched only by the task that runs the lab; its child tasks get copies or one `LabNode` each.
public final class LabRunner: @unchecked Sendable {
    let configuration: LabConfiguration
    let cleanup: LabCleanup
    let progress: ProgressLine
    let plan: FaultPlan
    var random: SeededRandom
    var nodes: [LabNode] = []
    var workload: Workload
    var namespaces: Namespaces?
    let binary: String
    let discoveryPort: UInt16
    var logDirectory: String { configuration.out + "/logs" }
    /// A random deployment secret per run: the lab's nodes never link to any other Parley node
    /// that shares the machine and happens to use the same discovery port (a test, another lab).
    var secretFile: String { logDirectory + "/network.secret" }
    var nodeDirectory: String { configuration.out + "/nodes" }

    let writer = Writer()

    // Measurements.
    var writes: [AcknowledgedWrite] = []
    var refused = 0
    /// Writes not sent because every available node was still busy with its last one for
    /// over a second (the cluster could not keep up with `--rate`).
    var skipped = 0
    var lastRefusal: String?
    var startMillis: UInt64 = 0
    var lastHealMillis: UInt64 = 0
    var lastAckMillis: UInt64 = 0
    var faultReports: [LabReport.FaultReport] = []
    /// Splits and lossy periods in force, by fault index: faults of one kind may overlap, and
    /// each heal ends only its own part.
    var activeSplits: [Int: [[Int]]] = [:]
    var activeLoss: [Int: Fault] = [:]
    /// Kills and pauses in force per node (fault indices): a node comes back when the last ends.
    var activeDown: [Int: Set<Int>] = [:]
    var activePause: [Int: Set<Int>] = [:]
    /// The report entry of each fault that started (fault index → `faultReports` index).
    var reportOf: [Int: Int] = [:]
    /// With `--netns`: the bridge each node's port is on, and how many bridges exist.
    var bridgeOf: [Int] = []
    var bridgeCount = 1

    public init(configuration: LabConfiguration, cleanup: LabCleanup, progress: ProgressLine) throws(LabError) {
        try configuration.validate()
        guard let binary = configuration.binary ?? LabProcess.ownExecutable else {
            throw .failure("cannot find the parley binary to start the nodes; pass it with --binary PATH")
        }
        self.configuration = configuration
        self.cleanup = cleanup
        self.progress = progress
        self.binary = binary
        plan = try configuration.faultPlan()
        random = SeededRandom(seed: configuration.seed)
        let rooms = (0..<configuration.rooms).map { index in
            let name = "lab-\(index)"
            return Workload.Room(name: name, partition: PartitionDescriptor.room(RoomName(name)!).id.text)
        }
        workload = Workload(rooms: rooms)
        // Below 32768 (the ephemeral range) and apart per process and seed (NETWORK-TESTS.md).
        discoveryPort = UInt16(20_000 + Int(getpid() % 300) * 40 + Int(configuration.seed % 40))
    }

    /// Runs the lab and returns its report (also written to `out`). Throws only when the lab
    /// itself could not run; a cluster that fails is a report with `passed == false`.
    public func run() async throws(LabError) -> LabReport {
        defer { cleanup.removeAll() }
        try prepareDirectories()
        do {
            return try await runPrepared()
        } catch {
            cleanup.removeAll()
            if !configuration.keepData { try? FileManager.default.removeItem(atPath: nodeDirectory) }
            throw error
        }
    }

    private func runPrepared() async throws(LabError) -> LabReport {
        if configuration.netns {
            let namespaces = Namespaces(prefix: "plab\(getpid())-", nodes: configuration.nodes, cleanup: cleanup)
            progress.note("creating \(configuration.nodes + 1) network namespaces")
            try await namespaces.create(logDirectory: logDirectory)
            self.namespaces = namespaces
            bridgeOf = Array(repeating: 0, count: configuration.nodes)
        }
        try await createIdentities()
        for node in nodes { try start(node, skew: 0) }
        try await waitUntilStarted(timeout: 30 + Double(configuration.nodes))
        await waitUntilLinked(timeout: 30 + 2 * Double(configuration.nodes))
        await createConversations()

        startMillis = LabNode.nowMillis
        try await driveWorkload()
        try await endRemainingFaults()
        try await waitUntilStarted(timeout: 30)
        let (convergedAt, diverged) = await settle()
        await sampleWire()
        await stopNodes()

        let report = makeReport(convergedAt: convergedAt, diverged: diverged)
        try write(report)
        if !configuration.keepData { try? FileManager.default.removeItem(atPath: nodeDirectory) }
        return report
    }

    // MARK: - Setting up

    private func prepareDirectories() throws(LabError) {
        let manager = FileManager.default
        if manager.fileExists(atPath: nodeDirectory) {
            throw .usage("\(configuration.out) holds the nodes of another lab run; choose a new --out directory or remove it")
        }
        do {
            try manager.createDirectory(atPath: nodeDirectory, withIntermediateDirectories: true)
            try manager.createDirectory(atPath: logDirectory, withIntermediateDirectories: true)
            var secret = SystemRandomNumberGenerator()
            let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &secret) }
            guard manager.createFile(atPath: secretFile, contents: Data(bytes), attributes: [.posixPermissions: 0o600]) else {
                throw CocoaError(.fileWriteUnknown)
            }
        } catch {
            throw .failure("cannot create \(configuration.out): \(error.localizedDescription); choose a writable --out directory")
        }
    }

    /// `parley init` for every node, a few at a time.
    private func createIdentities() async throws(LabError) {
        nodes = (0..<configuration.nodes).map { LabNode(index: $0, root: nodeDirectory) }
        progress.note("creating \(configuration.persons) identities")
        let environment = nodeEnvironment
        for batch in stride(from: 0, to: configuration.persons, by: 4) {
            let group = Array(nodes[batch..<min(batch + 4, configuration.persons)])
            let results = await withTaskGroup(of: (Int, LabProcess.Result).self) { tasks in
                for node in group {
                    tasks.addTask { [binary, logDirectory] in
                        (
                            node.index,
                            await LabProcess.run(
                                binary, ["--data-dir", node.dataDirectory, "init", "--nick", node.name], environment: environment,
                                captureIn: logDirectory, timeout: .seconds(30))
                        )
                    }
                }
                var results: [(Int, LabProcess.Result)] = []
                for await result in tasks { results.append(result) }
                return results
            }
            for (index, result) in results {
                guard result.status == 0 else {
                    let why = result.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
                    throw .failure(
                        "\(binary) init for \(nodes[index].name) failed (exit \(result.status))\(why.isEmpty ? "" : ": " + why); "
                            + "is --binary a parley binary?")
                }
                nodes[index].id = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            }
        }
        for index in configuration.persons..<nodes.count {
            guard let person = configuration.person(ofDevice: index) else { continue }
            try await pair(nodes[index], asDeviceOf: nodes[person])
        }
    }

    /// Makes `device` a paired device of `person`'s person with the commands a person types:
    /// `device pair` on the person's directory and `init --pair CODE@127.0.0.1:PORT` on the
    /// device's (the address: no beacon needs to be heard). Its `id` is then the device key,
    /// which its peers see on links.
    private func pair(_ device: LabNode, asDeviceOf person: LabNode) async throws(LabError) {
        progress.note("pairing \(device.name) as a device of \(person.name)")
        let environment = nodeEnvironment
        let host: ChildProcess
        do {
            host = try ChildProcess(
                executable: binary,
                arguments: ["--data-dir", person.dataDirectory, "device", "pair", "--broadcast", "127.255.255.255", "--minutes", "2", "--no-qr"],
                environment: environment, captureIn: logDirectory, name: "pair-\(device.name)")
        } catch {
            throw .failure("cannot start \(binary) device pair: \(error)")
        }
        cleanup.track(host)
        defer { host.kill() }
        let deadline = ContinuousClock.now + .seconds(10)
        var invitation: String?
        while invitation == nil, host.isRunning, ContinuousClock.now < deadline {
            invitation = host.stdout.split(separator: "\n").dropFirst().first?.split(separator: " ").last.map(String.init)
            if invitation == nil { try? await Task.sleep(for: .milliseconds(50)) }
        }
        guard let invitation, invitation.contains("@") else {
            throw .failure("\(person.name)'s device pair printed no address in 10 s: \(host.stdout) \(host.stderr)")
        }
        let guest = await LabProcess.run(
            binary, ["--data-dir", device.dataDirectory, "init", "--pair", invitation, "--name", device.name], environment: environment,
            captureIn: logDirectory, timeout: .seconds(60))
        guard guest.status == 0 else {
            throw .failure("pairing \(device.name) with \(person.name) failed (exit \(guest.status)): \(guest.stderr)")
        }
        _ = await host.waitForExit(timeout: .seconds(20))
        let whoami = await LabProcess.run(
            binary, ["--data-dir", device.dataDirectory, "whoami", "--json"], environment: environment, captureIn: logDirectory, timeout: .seconds(30))
        let rows = (try? JSONSerialization.jsonObject(with: Data(whoami.stdout.utf8))) as? [[String: Any]]
        guard let key = rows?.first?["device"] as? String else { throw .failure("\(device.name): whoami --json names no device: \(whoami.stdout)") }
        device.id = key
    }

    /// The environment of every node process: beacons only to loopback, whatever happens.
    var nodeEnvironment: [String: String] {
        ["HOME": configuration.out, "PARLEY_BROADCAST": namespaces == nil ? "127.255.255.255" : Namespaces.broadcast]
    }

    /// The options of every `parley run`: loopback (or the namespace's bridge), the lab's
    /// discovery port, every room joined, and timings fit for seconds-long faults: beacons every
    /// 0.5–1 s (a split peer is gone after 3 s), pings every 2 s (a paused node's links close
    /// after 6 s), anti-entropy every 2 s (a lost push is repaired within seconds).
    var runArguments: [String] {
        var arguments =
            namespaces == nil
            ? ["--listen", "127.0.0.1:0", "--broadcast", "127.255.255.255"]
            : ["--listen", "0.0.0.0:0", "--broadcast", Namespaces.broadcast]
        arguments += ["--discovery-port", String(discoveryPort), "--network-secret-file", secretFile]
        for room in workload.rooms { arguments += ["--join", room.name] }
        if let activePeers = configuration.activePeers { arguments += ["--active-peers", String(activePeers)] }
        if configuration.pushTree { arguments.append("--push-tree") }
        arguments += [
            "--beacon-interval", "500", "--max-beacon-interval", "1000", "--ping-interval", "2000", "--sync-interval", "2000",
        ]
        return arguments
    }

    func start(_ node: LabNode, skew: Int64) throws(LabError) {
        try node.start(
            binary: binary, arguments: runArguments, launcher: namespaces?.launcher(node.index) ?? [], environment: nodeEnvironment,
            skew: skew, logDirectory: logDirectory, cleanup: cleanup)
    }

    /// Waits until every started node answers; throws if one dies or `timeout` passes.
    func waitUntilStarted(timeout: Double) async throws(LabError) {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            var waiting: [String] = []
            for node in nodes where node.state == .starting {
                if try await node.checkStarted() {
                    await node.applyFaults()
                } else {
                    waiting.append(node.name)
                }
            }
            if waiting.isEmpty { return }
            if Date() > deadline { throw .failure("\(waiting.joined(separator: ", ")) did not start within \(Int(timeout)) s; see \(logDirectory)") }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Waits until every node is linked to every other (or `timeout`; the run goes on, and the
    /// progress line shows the links).
    private func waitUntilLinked(timeout: Double) async {
        let deadline = Date().addingTimeInterval(timeout)
        let wanted = nodes.count - 1
        while Date() < deadline {
            let linked = await LabNode.fullyLinkedCount(nodes)
            progress.note("linking: \(linked)/\(nodes.count) nodes see all \(wanted) peers")
            if linked == nodes.count { return }
            try? await Task.sleep(for: .milliseconds(250))
        }
        progress.note("not every node linked to every other within \(Int(timeout)) s; starting anyway")
    }

    /// Creates `--conversations` conversations, each by one node with 2–4 others (persons only:
    /// a device is in its person's conversations through the person).
    private func createConversations() async {
        let count = configuration.persons
        for index in 0..<configuration.conversations {
            let creator = index % count
            let others = (0..<count).filter { $0 != creator }.shuffled(using: &random)
            let members = Array(others.prefix(min(others.count, 2 + Int(random.next() % 3))))
            await write(Workload.createConversation(by: creator, members: members, name: "lab conversation \(index)"), by: creator)
        }
    }

    // MARK: - The workload

    private func driveWorkload() async throws(LabError) {
        let interval = 1.0 / configuration.rate
        let start = Date()
        let end = start.addingTimeInterval(configuration.duration)
        var events = faultEvents(start: start)
        var nextWrite = start
        var nextRSS = start, nextWire = start, nextProgress = start
        while Date() < end {
            let now = Date()
            while let event = events.first, event.at <= now {
                events.removeFirst()
                try await perform(event)
            }
            record(writer.collect())
            while nextWrite <= now, nextWrite < end {
                guard launchNext() else {
                    // Every node is busy: wait for one, but never fall more than a second behind.
                    while nextWrite < now.addingTimeInterval(-1) {
                        skipped += 1
                        nextWrite = nextWrite.addingTimeInterval(interval)
                    }
                    break
                }
                nextWrite = nextWrite.addingTimeInterval(interval)
            }
            for node in nodes where node.state == .starting {
                if try await node.checkStarted() {
                    await node.applyFaults()
                    lastHealMillis = max(lastHealMillis, LabNode.nowMillis)
                }
            }
            if now >= nextRSS {
                for node in nodes { node.sampleRSS() }
                nextRSS = now.addingTimeInterval(1)
            }
            if now >= nextWire {
                await sampleWire()
                nextWire = now.addingTimeInterval(3)
            }
            if now >= nextProgress {
                progress.update(runningLine(elapsed: now.timeIntervalSince(start)))
                nextProgress = now.addingTimeInterval(1)
            }
            let wake = [events.first?.at, nextWrite < end ? nextWrite : nil, nextRSS, end].compactMap { $0 }.min() ?? end
            let pause = min(0.02, max(0.001, wake.timeIntervalSinceNow))
            try? await Task.sleep(for: .milliseconds(Int(pause * 1000)))
        }
        await writer.drain(timeout: .seconds(10))
        record(writer.collect())
        pendingEvents = events
        progress.update(runningLine(elapsed: configuration.duration))
        progress.finishLine()
    }

    /// Events not yet due when the workload ended (faults lasting past the end).
    var pendingEvents: [FaultEvent] = []

    /// Starts the next write on a node that is up and has no write in flight; false when there
    /// is none.
    private func launchNext() -> Bool {
        let available = nodes.filter { $0.isUp && !writer.isBusy($0.index) }.map(\.index)
        guard let (node, request) = workload.next(available: available, nodes: nodes.count, random: &random) else { return false }
        writer.launch(
            request, resolved: Workload.resolve(request, ids: nodes.map(\.id)), node: node, dataDirectory: nodes[node].dataDirectory,
            timeout: .seconds(10))
        return true
    }

    /// Asks `node` to author `request` and waits for the answer (setting up conversations).
    private func write(_ request: AuthorRequest, by node: Int) async {
        writer.launch(
            request, resolved: Workload.resolve(request, ids: nodes.map(\.id)), node: node, dataDirectory: nodes[node].dataDirectory,
            timeout: .seconds(10))
        await writer.drain(timeout: .seconds(15))
        record(writer.collect())
    }

    /// Books answered writes: an answer with an op is an acknowledged write.
    private func record(_ outcomes: [Writer.Outcome]) {
        for outcome in outcomes {
            guard let response = outcome.response, response.ok, let op = response.author else {
                refused += 1
                lastRefusal = outcome.response?.error ?? "no answer from \(nodes[outcome.node].name)"
                continue
            }
            writes.append(
                AcknowledgedWrite(
                    partition: op.partition, author: op.author, seq: op.seq, id: op.id, node: outcome.node, kind: outcome.request.kind,
                    sentAtMillis: outcome.sentAtMillis))
            lastAckMillis = max(lastAckMillis, LabNode.nowMillis)
            workload.acknowledged(outcome.request, by: outcome.node, id: op.id, partition: op.partition, at: LabNode.nowMillis)
        }
    }

    /// Link bytes of every node that is up, asked in parallel.
    func sampleWire() async {
        await withTaskGroup(of: Void.self) { group in
            for node in nodes where node.isUp {
                group.addTask { _ = await node.sampleWire() }
            }
        }
    }

    private func runningLine(elapsed: Double) -> String {
        let up = nodes.filter(\.isUp).count
        let active = faultReports.filter { $0.endSeconds == nil && $0.kind != "skew" && $0.kind != "broken" }.map(\.kind)
        let rate = Double(writes.count) / max(1, elapsed)
        return String(
            format: "lab %5.1f/%.0f s  writes %d (%.1f/s, %d refused, %d skipped)  nodes %d/%d up", elapsed, configuration.duration,
            writes.count, rate, refused, skipped, up, nodes.count)
            + (active.isEmpty ? "" : "  faults: " + active.joined(separator: ", "))
    }

    // MARK: - Settling

    /// The partitions to compare: rooms, the directory, and the conversations (on their members).
    var checkedPartitions: [String] {
        workload.rooms.map(\.partition) + [PartitionDescriptor.directory.id.text] + workload.conversations.map(\.partition)
    }

    /// Polls the stores' digests until every replica agrees or the settle timeout passes.
    /// Returns when they agreed (Unix ms) and what still differs.
    private func settle() async -> (UInt64?, [String]) {
        let deadline = Date().addingTimeInterval(configuration.settleTimeout)
        let partitions = checkedPartitions
        let wanted = Set(partitions)
        let started = Date()
        while true {
            let digests = nodes.map { StoreReader.digests(path: $0.dataDirectory + "/parley.db", partitions: wanted) }
            let diverged = divergedPartitions(digests: digests, partitions: partitions) { self.holders(of: $0) }
            if diverged.isEmpty {
                progress.note(String(format: "converged %.1f s after the workload", Date().timeIntervalSince(started)))
                return (LabNode.nowMillis, [])
            }
            if Date() > deadline {
                progress.note("not converged after \(Int(configuration.settleTimeout)) s: \(diverged.count) partition(s) differ")
                return (nil, diverged)
            }
            progress.update(String(format: "settling %.1f s: %d partition(s) differ", Date().timeIntervalSince(started), diverged.count))
            for node in nodes { node.sampleRSS() }
            try? await Task.sleep(for: .milliseconds(250))
        }
    }

    func holders(of partition: String) -> Set<Int> {
        workload.holders(of: partition, nodes: nodes.count)
    }

    private func stopNodes() async {
        await withTaskGroup(of: Void.self) { group in
            for node in nodes {
                group.addTask { [cleanup] in await node.stop(grace: .seconds(5), cleanup: cleanup) }
            }
        }
    }
}
