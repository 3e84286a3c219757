// The latency figures' reference: the same cluster, pacing and clock with only the work no
// replica can skip. Each floor node is a process of this executable (`--floor-node`), as each
// Parley node is a process of its own (ten processes share two cores' caches and scheduler, a
// cost one process with ten threads would hide).
import Foundation
import Glibc
import SQLite
import Sodium
import Store

/// One floor node: a single thread that links to every other floor node over loopback TCP and,
/// per write, signs the message, stores it (one SQLite insert and commit) and sends it to each
/// peer through secretstream; per delivery it decrypts, verifies the Ed25519 signature of one
/// message in `ReplicaStore.maxLinkAuthenticatedTail + 1` per author (as a Parley node checks
/// the pushes an author sends over its own link: the link vouches for the rest) and stores the
/// message with its receive time, one commit per wake-up (as Parley's drain). No
/// handshake, no JSON, no views, no gossip state: what is left is the floor of a replica that
/// checks and keeps what it receives. With `FloorRows.design` it keeps the rows docs/DESIGN.md §5
/// asks of each op as well (`FloorStore`), still in this structure.
///
/// Its writes follow `Pacer`'s schedule: write `k` is node `k % count`'s, due at
/// `start + k × interval` (`start` given by the parent on CLOCK_MONOTONIC, which all processes
/// share). Latency = the receiver's wall-clock millisecond − the author's, as the Parley
/// figures take them from `received_at`.
enum FloorNode {
    /// What the parent asks of one floor node: `--floor-node INDEX COUNT PACE SECONDS WARMUP
    /// EXTRA_NANOS ROWS DIRECTORY` (`WARMUP` writes at the pace come first and are not measured;
    /// the work of `EXTRA_NANOS` of CPU at full speed is spent at each wake-up that received
    /// deliveries, besides the floor's work: 0 for the floor itself, Parley's surplus per
    /// delivery for `floor_at_parley_cpu_*`; `ROWS` is a `FloorRows`: `plain` for the floor,
    /// `design` for `floor_design_*`).
    struct Spec {
        let index: Int
        let count: Int
        let pace: Int
        let seconds: Double
        let warmup: Int
        let extraNanosPerDelivery: UInt64
        let rows: FloorRows
        let directory: String

        init(
            index: Int, count: Int, pace: Int, seconds: Double, warmup: Int, extraNanosPerDelivery: UInt64, rows: FloorRows,
            directory: String
        ) {
            (self.index, self.count, self.pace, self.seconds, self.warmup) = (index, count, pace, seconds, warmup)
            (self.extraNanosPerDelivery, self.rows, self.directory) = (extraNanosPerDelivery, rows, directory)
        }

        init?(_ arguments: [String]) {
            guard arguments.count == 8, let index = Int(arguments[0]), let count = Int(arguments[1]), (2...64).contains(count),
                (0..<count).contains(index), let pace = Int(arguments[2]), pace > 0, let seconds = Double(arguments[3]), seconds > 0,
                let warmup = Int(arguments[4]), warmup >= 0, let extra = UInt64(arguments[5]), extra <= 1_000_000_000,
                let rows = FloorRows(rawValue: arguments[6])
            else { return nil }
            self.init(
                index: index, count: count, pace: pace, seconds: seconds, warmup: warmup, extraNanosPerDelivery: extra, rows: rows,
                directory: arguments[7])
        }

        var arguments: [String] {
            [
                "--floor-node", String(index), String(count), String(pace), String(seconds), String(warmup), String(extraNanosPerDelivery),
                rows.rawValue, directory,
            ]
        }
    }

    /// The link key every floor stream uses (the floor leaves out the handshake that agrees one).
    static let streamKey = SecureBytes([UInt8](repeating: 0x46, count: SecretStream.keyBytes))

    /// Node `index`'s signing key, which every floor node can derive.
    static func keyPair(_ index: Int) -> Signing.KeyPair {
        var seed = [UInt8](repeating: 0x46, count: Signing.seedBytes)
        seed[0] = UInt8(index)
        return try! Signing.KeyPair(seed: seed)
    }

    /// Runs the floor node and exits: 0 after writing `result-INDEX`, 1 with a line on standard
    /// error.
    static func main(_ arguments: [String]) -> Never {
        guard let spec = Spec(arguments) else {
            FileHandle.standardError.write(Data("parley-bench: --floor-node takes INDEX COUNT PACE SECONDS WARMUP EXTRA_NANOS ROWS DIRECTORY\n".utf8))
            exit(2)
        }
        do {
            try run(spec)
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("parley-bench floor node \(spec.index): \(error)\n".utf8))
            exit(1)
        }
    }

    private static func run(_ spec: Spec) throws {
        let keys = (0..<spec.count).map(keyPair)
        let store = try FloorStore(path: "\(spec.directory)/node-\(spec.index).db", rows: spec.rows, keys: keys, me: spec.index)

        // Calibrated before the links and the start: on a quiet machine, the fastest of its runs.
        let spinRate = spec.extraNanosPerDelivery > 0 ? SpinWork.iterationsPerNano() : 0
        let peers = try FloorLinks(spec)
        defer { peers.close() }
        try writeFile("\(spec.directory)/ready-\(spec.index)", "ready\n")
        let start = try waitForStart(spec.directory)

        let interval = 1e9 / Double(spec.pace)
        // Write `k` is the `k`th of the schedule; the first `warmup` are not measured.
        let total = spec.warmup + Int(Double(spec.pace) * spec.seconds)
        let own = Array(stride(from: spec.index, to: total, by: spec.count))
        let measuredOwn = own.filter { $0 >= spec.warmup }.count
        let expected = (total - spec.warmup) - measuredOwn
        /// Each measured delivery: the author's write stamp (ms), the author, the latency (ms).
        var latencies: [(written: Int, author: Int, latency: Double)] = []
        latencies.reserveCapacity(expected)
        var nextOwn = 0
        var seq: Int64 = 0
        Pacer.sleep(until: start)
        let measuredFrom = start + UInt64(Double(spec.warmup) * interval)
        var cpuBefore: Double?
        let deadline = measuredFrom + UInt64((spec.seconds + 30) * 1e9)
        while nextOwn < own.count || latencies.count < expected {
            let now = Pacer.monotonicNanos()
            guard now < deadline else { throw BenchError("\(latencies.count) of \(expected) deliveries within the deadline") }
            if cpuBefore == nil, now >= measuredFrom { cpuBefore = cpuSeconds() }
            let due = nextOwn < own.count ? start + UInt64(Double(own[nextOwn]) * interval) : now + 100_000_000
            if now >= due {
                seq += 1
                let signed = try store.writeOwn(
                    seq: seq, writtenMicros: wallMicros(), text: "paced message \(own[nextOwn]) of the latency benchmark")
                try peers.sendToAll(signed)
                nextOwn += 1
                continue
            }
            // One wake-up: every message that arrived, checked, then stored in one transaction.
            let arrived = try peers.receive(timeoutNanos: due - now)
            guard !arrived.isEmpty else { continue }
            let checked = try arrived.map { try store.check($0) }
            // Once per wake-up, not per message: Parley's surplus is mostly per wake-up (its poll, its
            // commit, its WAL frames), and shrinks per message when a backlog is handled in one go.
            if spec.extraNanosPerDelivery > 0 { spendWork(nanos: spec.extraNanosPerDelivery, rate: spinRate) }
            try store.storeReceived(checked, stamp: wallMicros) { message, received in
                // The author's seq-th write is write (seq − 1) × count + author of the schedule.
                guard (Int(message.seq) - 1) * spec.count + message.author >= spec.warmup else { return }
                let written = Int(message.writtenMicros / 1_000)
                latencies.append((written, message.author, Double(Int64(received) - Int64(message.writtenMicros)) / 1_000))
            }
        }
        let cpu = cpuSeconds() - (cpuBefore ?? cpuSeconds())
        try writeFile(
            "\(spec.directory)/result-\(spec.index)",
            "\(cpu) \(measuredOwn)\n"
                + latencies.map { "\($0.written),\($0.author),\(spec.index)," + String(format: "%.3f", $0.latency) }.joined(separator: "\n") + "\n")
    }

    /// Spends the work `nanos` of CPU stand for at full speed: a fixed count of loop iterations,
    /// calibrated by `SpinWork.iterationsPerNano`. Work, not CPU time: while the host slows this
    /// machine's vCPUs (its slow episodes, `HostProbe`), Parley's work takes
    /// longer in CPU time too, and so must the stand-in for it; a spin that stopped at a CPU-time
    /// deadline would finish early exactly when the host is slow.
    private static func spendWork(nanos: UInt64, rate: Double) {
        SpinWork.run(iterations: Int(Double(nanos) * rate))
    }

    /// The parent's start time (CLOCK_MONOTONIC nanoseconds), once it wrote it: after every
    /// floor node is linked.
    private static func waitForStart(_ directory: String) throws -> UInt64 {
        let deadline = Pacer.monotonicNanos() + 60_000_000_000
        while Pacer.monotonicNanos() < deadline {
            if let text = try? String(contentsOfFile: directory + "/start", encoding: .utf8),
                let start = UInt64(text.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                return start
            }
            usleep(5_000)
        }
        throw BenchError("no start time within 60 s")
    }

    /// Writes `text` to `path` whole (through a rename), so a reader never sees half of it.
    static func writeFile(_ path: String, _ text: String) throws {
        try text.write(toFile: path + ".tmp", atomically: false, encoding: .utf8)
        guard rename(path + ".tmp", path) == 0 else { throw BenchError("cannot rename \(path).tmp: \(String(cString: strerror(errno)))") }
    }

    private static func wallMicros() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
    }

    private static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}

/// A floor node's links: a TCP connection to every other floor node (the lower index dials),
/// a secretstream each way, frames of a 4-byte length and the ciphertext.
final class FloorLinks {
    private var sockets: [Int32] = []
    private var peerOf: [Int32: Int] = [:]
    private var pushers: [Int: SecretStream.Pusher] = [:]
    private var pullers: [Int: SecretStream.Puller] = [:]
    /// Bytes read from each peer (by index) that do not make a whole frame yet.
    private var pending: [[UInt8]]
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)

    init(_ spec: FloorNode.Spec) throws {
        pending = Array(repeating: [], count: spec.count)
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(listener) }
        var address = Self.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                guard bind(listener, generic, length) == 0, listen(listener, 64) == 0, getsockname(listener, generic, &length) == 0 else {
                    throw BenchError("cannot listen on loopback: \(String(cString: strerror(errno)))")
                }
            }
        }
        try FloorNode.writeFile("\(spec.directory)/port-\(spec.index)", "\(UInt16(bigEndian: address.sin_port))\n")
        var links: [(peer: Int, fd: Int32)] = []
        for peer in 0..<spec.index {
            let port = try Self.waitForPort(of: peer, in: spec.directory)
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var remote = Self.loopback(port: port)
            let status = withUnsafePointer(to: &remote) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard status == 0 else { throw BenchError("cannot reach floor node \(peer): \(String(cString: strerror(errno)))") }
            try Self.writeAll(fd, [UInt8(spec.index)])
            links.append((peer, fd))
        }
        for _ in spec.index + 1..<spec.count {
            var ready = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 30_000) == 1 else { throw BenchError("a floor node did not connect within 30 s") }
            let fd = accept(listener, nil, nil)
            let hello = try Self.readExactly(fd, 1)
            links.append((Int(hello[0]), fd))
        }
        var one: Int32 = 1
        for (peer, fd) in links {
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let pusher = try SecretStream.Pusher(key: FloorNode.streamKey)
            try Self.writeAll(fd, pusher.header)
            (pushers[peer], peerOf[fd]) = (pusher, peer)
            sockets.append(fd)
        }
        for (peer, fd) in links {
            pullers[peer] = try SecretStream.Puller(key: FloorNode.streamKey, header: try Self.readExactly(fd, SecretStream.headerBytes))
        }
    }

    func close() {
        for fd in peerOf.keys { Glibc.close(fd) }
        sockets = []
    }

    /// Encrypts `message` for every peer and sends it (blocking: the frames are small).
    func sendToAll(_ message: [UInt8]) throws {
        for fd in sockets {
            let sealed = try pushers[peerOf[fd]!]!.push(message)
            var length = UInt32(sealed.count).bigEndian
            try Self.writeAll(fd, withUnsafeBytes(of: &length) { Array($0) } + sealed)
        }
    }

    /// Waits up to `timeoutNanos` for data, then reads what every ready link has: the whole
    /// messages it completes, decrypted.
    func receive(timeoutNanos: UInt64) throws -> [[UInt8]] {
        var fds = sockets.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        // Whole milliseconds, rounded up: a write is at most 1 ms late, and never spins.
        let ready = poll(&fds, nfds_t(fds.count), Int32(min(timeoutNanos + 999_999, 1_000_000_000) / 1_000_000))
        guard ready > 0 else { return [] }
        var messages: [[UInt8]] = []
        for entry in fds where entry.revents != 0 {
            let peer = peerOf[entry.fd]!
            let got = buffer.withUnsafeMutableBytes { recv(entry.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if got < 0, errno == EAGAIN || errno == EINTR { continue }
            guard got > 0 else {
                // A node that has all it expects leaves; whatever it sent was read before its end.
                sockets.removeAll { $0 == entry.fd }
                continue
            }
            pending[peer].append(contentsOf: buffer[0..<got])
            let puller = pullers[peer]!
            let used = try pending[peer].withUnsafeBytes { frames throws -> Int in
                var offset = 0
                while frames.count - offset >= 4 {
                    let length = frames[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
                    guard frames.count - offset - 4 >= length else { break }
                    let sealed = UnsafeRawBufferPointer(rebasing: frames[offset + 4..<offset + 4 + length])
                    messages.append(try puller.pull(sealed, additionalData: UnsafeRawBufferPointer(start: nil, count: 0)).message)
                    offset += 4 + length
                }
                return offset
            }
            pending[peer].removeFirst(used)
        }
        return messages
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return address
    }

    private static func waitForPort(of peer: Int, in directory: String) throws -> UInt16 {
        let deadline = Pacer.monotonicNanos() + 30_000_000_000
        while Pacer.monotonicNanos() < deadline {
            if let text = try? String(contentsOfFile: "\(directory)/port-\(peer)", encoding: .utf8),
                let port = UInt16(text.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                return port
            }
            usleep(2_000)
        }
        throw BenchError("floor node \(peer) did not listen within 30 s")
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws {
        guard Pacer.writeAll(fd, bytes) else { throw BenchError("a floor link failed: \(String(cString: strerror(errno)))") }
    }

    private static func readExactly(_ fd: Int32, _ count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let got = bytes.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + offset, count - offset, 0) }
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { throw BenchError("a floor link closed during set-up") }
            offset += got
        }
        return bytes
    }
}

/// The figures of a floor cluster of `count` nodes: `prefix` is `floor` or `floor_at_parley_cpu`.
func floorKeys(prefix: String, nodes count: Int) -> [String] {
    [
        "\(prefix)_latency_p50_ms_\(count)_nodes", "\(prefix)_latency_p99_ms_\(count)_nodes", "\(prefix)_cpu_ms_per_write_\(count)_nodes",
        "\(prefix)_host_slowed_percent_\(count)_nodes",
    ]
}

/// The floor cluster of `count` nodes at the bench's pace (`floor_*` figures): spawns the floor
/// nodes, starts them together once all are linked, and gathers their deliveries' latencies
/// and their CPU over the paced window.
///
/// With `extraNanosPerDelivery`, each wake-up that received deliveries also spends the work of
/// that much CPU, and the figures are `floor_at_parley_cpu_*`: Parley's CPU per write at the
/// floor's structure (one thread, no hand-offs), a stand-in that brackets Parley rather than
/// models it: the surplus is spent once per wake-up and on the receivers only, though part of
/// Parley's is the author's own write (docs/BENCHMARKS.md, *The figures*).
///
/// `plainExtraNanosPerDelivery` is `--floor-extra-ms` on the plain floor: the figures keep their
/// `floor_*` names (a sweep's experiment, not the reference of a default run).
///
/// With `rows: .design` the floor nodes keep docs/DESIGN.md §5's rows of each op (`FloorRows`), and
/// the figures are `floor_design_*`: what this design's storage costs a replica of the floor's
/// structure, and the tail the host gives it.
func floorCluster(
    nodes count: Int, extraNanosPerDelivery: UInt64 = 0, plainExtraNanosPerDelivery: UInt64 = 0, rows: FloorRows = .plain
) async throws -> [BenchResult?] {
    let atParleyCPU = extraNanosPerDelivery > 0
    let prefix = atParleyCPU ? "floor_at_parley_cpu" : rows == .design ? "floor_design" : "floor"
    let extraNanosPerDelivery = atParleyCPU ? extraNanosPerDelivery : plainExtraNanosPerDelivery
    let keys = floorKeys(prefix: prefix, nodes: count)
    guard keys.contains(where: { wants($0) }) else { return [] }
    let directory = scratch + "/\(prefix)-\(count)"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    var processes: [Process] = []
    defer { for process in processes where process.isRunning { process.terminate() } }
    for index in 0..<count {
        let spec = FloorNode.Spec(
            index: index, count: count, pace: options.pace, seconds: options.latencySeconds, warmup: options.warmupWrites,
            extraNanosPerDelivery: extraNanosPerDelivery, rows: rows, directory: directory)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = spec.arguments
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        processes.append(process)
    }
    func failed() -> Process? { processes.first { !$0.isRunning && $0.terminationStatus != 0 } }
    let readyBy = DispatchTime.now().uptimeNanoseconds + 60_000_000_000
    while (0..<count).contains(where: { !FileManager.default.fileExists(atPath: "\(directory)/ready-\($0)") }) {
        if failed() != nil || DispatchTime.now().uptimeNanoseconds > readyBy { throw BenchError("the \(count)-node floor cluster did not link") }
        try await Task.sleep(for: .milliseconds(10))
    }
    try FloorNode.writeFile(directory + "/start", "\(Pacer.monotonicNanos() + 100_000_000)\n")
    let probe = HostProbe()
    defer { _ = probe.stop() }
    let doneBy = DispatchTime.now().uptimeNanoseconds + UInt64((options.latencySeconds + 60) * 1e9)
    while processes.contains(where: \.isRunning) {
        if failed() != nil { throw BenchError("a floor node failed (its error is above)") }
        if DispatchTime.now().uptimeNanoseconds > doneBy { throw BenchError("the \(count)-node floor cluster did not finish") }
        try await Task.sleep(for: .milliseconds(20))
    }
    if failed() != nil { throw BenchError("a floor node failed (its error is above)") }
    // Over the whole run (its warm-up too): the floor nodes keep no wall-clock window of their own.
    let probed = probe.stop()
    var latencies: [Double] = []
    var csv = "written_ms,author,receiver,latency_ms\n"
    var cpu = 0.0
    var writes = 0
    for index in 0..<count {
        let lines = try String(contentsOfFile: "\(directory)/result-\(index)", encoding: .utf8).split(separator: "\n")
        let head = lines.first?.split(separator: " ") ?? []
        cpu += head.first.flatMap { Double($0) } ?? 0
        writes += head.dropFirst().first.flatMap { Int($0) } ?? 0
        for line in lines.dropFirst() {
            guard let latency = line.split(separator: ",").last.flatMap({ Double($0) }) else { continue }
            latencies.append(latency)
            if options.deliveries != nil { csv += line + "\n" }
        }
    }
    if let file = options.deliveries { try csv.write(toFile: "\(file)_\(prefix)_\(count)_nodes.csv", atomically: true, encoding: .utf8) }
    let name = atParleyCPU ? "floor at Parley's CPU" : rows == .design ? "floor with the design's rows" : "floor"
    progress("\(count)-node \(name): \(writes) writes, \(latencies.count) deliveries, " + String(format: "%.2f cores", cpu / options.latencySeconds))
    // The floor at Parley's CPU is compared with Parley's own figures: same CPU, its latency.
    let parley = atParleyCPU
    return [
        record(keys[0], unit: "ms", value: percentile(latencies, 0.5), reference: parley ? "latency_p50_ms_\(count)_nodes" : nil),
        record(keys[1], unit: "ms", value: percentile(latencies, 0.99), reference: parley ? "latency_p99_ms_\(count)_nodes" : nil),
        record(
            keys[2], unit: "ms", value: cpu * 1_000 / Double(max(1, writes)), reference: parley ? "paced_cpu_ms_per_write_\(count)_nodes" : nil),
        record(keys[3], unit: "%", value: HostProbe.slowedPercent(probed)),
    ]
}
