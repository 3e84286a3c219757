// parley-bench: Parley's figures (issue 9), each next to the machine's own limit measured in the
// same run: the local write and apply paths against raw SQLite; replication, latency, catch-up,
// idle cost, memory, start-up and discovery of real `parley run` processes on loopback against
// secretstream and loopback TCP. Never part of the tests (`make bench`).
import Foundation
import Identity
import Lab
import Replica
import SQLite
import Sodium
import Store
import TestSupport
import Transport

// A floor node of the latency figures' reference cluster (`FloorCluster.swift`), spawned by this program.
if CommandLine.arguments.dropFirst().first == "--floor-node" { FloorNode.main(Array(CommandLine.arguments.dropFirst(2))) }

let options = BenchOptions(arguments: Array(CommandLine.arguments.dropFirst()))
let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("parley-bench-\(UUID().uuidString)").path
try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: scratch) }

// The node figures: real `parley run` processes (release build) on loopback. Their binary is
// checked before anything is measured, so a missing one does not cost the figures before them. The
// floors (`--floor-node` processes of this executable) need none; the floor at Parley's CPU does.
let parleyBinary =
    options.binary
    ?? ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")).map {
        ($0 as NSString).deletingLastPathComponent + "/parley"
    } ?? "parley")
let wantsNodes =
    wants(
        "replication_ops_per_s", "replication_mb_per_s", "replication_wire_bytes_per_op", "catchup_100k_s", "idle_bytes_per_min_per_link",
        "idle_cpu_percent", "rss_idle_mb", "rss_idle_cluster_mb", "rss_1m_ops_mb", "startup_1m_ops_ms", "startup_empty_ms",
        "discovery_10_nodes_s") || [3, 10].contains { wantsParleyLatency(nodes: $0) }
if wantsNodes, !FileManager.default.isExecutableFile(atPath: parleyBinary) {
    FileHandle.standardError.write(
        Data("parley-bench: no parley binary at \(parleyBinary); build it (make release) or pass --binary\n".utf8))
    exit(1)
}

var results: [BenchResult?] = []

// The store figures run on encrypted stores, as nodes keep them (docs/DESIGN.md §5.1);
// PARLEY_BENCH_PLAIN_STORE=1 runs them on plain files, for the cost of the encryption.
let benchStoreKey: SecureBytes? = ProcessInfo.processInfo.environment["PARLEY_BENCH_PLAIN_STORE"] == "1" ? nil : SecureBytes.random(32)

// 1. Raw SQLite: 200-byte rows, 1,000 per transaction, integer keys (the machine's own limit).
results.append(
    try measure("sqlite_insert_rows_per_s", unit: "rows/s", count: options.sqliteRows) { () -> Database in
        let db = try Database(path: scratch + "/raw.db")
        try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, payload BLOB NOT NULL) STRICT")
        return db
    } _: { db in
        let payload = SQLValue.blob([UInt8](repeating: 7, count: 200))
        let insert = try db.cachedStatement("INSERT INTO t(payload) VALUES (?)")
        var written = 0
        while written < options.sqliteRows {
            try db.transaction {
                for _ in 0..<1000 { try insert.run(payload) }
            }
            written += 1000
        }
    })

// 1b. Raw SQLite, one row per transaction: the reference for posts, which commit one by one.
results.append(
    try measure("sqlite_single_row_txn_per_s", unit: "txn/s", count: 20000) { () -> Database in
        let db = try Database(path: scratch + "/raw1.db")
        try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, payload BLOB NOT NULL) STRICT")
        return db
    } _: { db in
        let payload = SQLValue.blob([UInt8](repeating: 7, count: 200))
        let insert = try db.cachedStatement("INSERT INTO t(payload) VALUES (?)")
        for _ in 0..<20000 { try db.transaction(.immediate) { try insert.run(payload) } }
    })

// 2. Local posts: sign + append + head + views, one transaction per post (as `parley send`
// commits one).
let author = Fixtures.identity(0)
let lobby = PartitionDescriptor.room(RoomName("lobby")!)
results.append(
    try measure("post_single_txn_per_s", unit: "posts/s", count: options.posts, reference: "sqlite_single_row_txn_per_s") { () -> ReplicaStore in
        let store = try ReplicaStore(path: scratch + "/posts.db", key: benchStoreKey)
        try store.log.ensurePartition(lobby, joined: true)
        return store
    } _: { store in
        let start = Fixtures.now()
        for i in 0..<options.posts {
            try store.author(
                .post(text: "message number \(i) from the benchmark", attachments: [], location: nil, replyTo: nil),
                in: lobby.id, by: author, nowMillis: start + UInt64(i))
        }
    })

// 2b. Local posts in groups of 256 per transaction (group commit), signed ahead on other
// threads (`BatchAuthoring.swift`): what one author's writes cost when their commits are shared.
results.append(
    try measure("post_ops_per_s", unit: "posts/s", count: options.posts, reference: "sqlite_insert_rows_per_s", target: .atLeast(20_000)) {
        () -> ReplicaStore in
        let store = try ReplicaStore(path: scratch + "/posts-grouped.db", key: benchStoreKey)
        try store.log.ensurePartition(lobby, joined: true)
        return store
    } _: { store in
        let start = Fixtures.now()
        var writer = BatchAuthor(identity: author, partition: lobby.id)
        var i = 0
        while i < options.posts {
            let group = (i..<min(i + 256, options.posts)).map { index in
                OperationBody.post(text: "message number \(index) from the benchmark", attachments: [], location: nil, replyTo: nil)
            }
            _ = try writer.author(group, into: store, nowMillis: start + UInt64(i))
            i += group.count
        }
    })

// 3. Apply: ops received from peers into a fresh store, in OPS-sized batches of 256, with
// chain-batched verification (one signature per run of one author's ops).
let wantsApply = isWanted("apply_ops_per_s")
if wantsApply { print("signing \(options.applyOps) ops for the apply benchmark (not timed)...") }
var factory = OpFactory()
let writers = (0..<10).map { Fixtures.identity(UInt8($0)) }
var received: [Replica.Operation] = []
received.reserveCapacity(options.applyOps)
for i in 0..<(wantsApply ? options.applyOps : 0) {
    let writer = writers[(i / 256) % writers.count]
    received.append(factory.make(.post(text: "message number \(i) from a peer", attachments: [], location: nil, replyTo: nil), in: lobby.id, by: writer))
}
// Deliver author by author in chain order, as WANT/OPS would.
received.sort { ($0.author, $0.seq) < ($1.author, $1.seq) }
results.append(
    try measure("apply_ops_per_s", unit: "ops/s", count: options.applyOps, reference: "sqlite_insert_rows_per_s", target: .atLeast(150_000)) {
        () -> ReplicaStore in
        let store = try ReplicaStore(path: scratch + "/apply.db", key: benchStoreKey)
        try store.log.ensurePartition(lobby, joined: true)
        return store
    } _: { store in
        var index = 0
        while index < received.count {
            let batch = Array(received[index..<min(index + 256, received.count)])
            let outcomes = try store.apply(batch, nowMillis: Fixtures.now())
            precondition(outcomes.allSatisfy { $0 == .applied }, "benchmark ops were not applied: \(Set(outcomes))")
            index += 256
        }
    })

received = []

// The transport's limits: secretstream (every link frame) and raw loopback TCP.
// The signature limits: every post is signed once; the apply path verifies one signature per
// chain run, the live path one per op.
if wants("ed25519_signs_per_s") {
    results.append(record("ed25519_signs_per_s", unit: "signs/s", value: ed25519Rate(verify: false, count: options.quick ? 5_000 : 20_000)))
}
if wants("ed25519_verifies_per_s") {
    results.append(record("ed25519_verifies_per_s", unit: "verifies/s", value: ed25519Rate(verify: true, count: options.quick ? 5_000 : 20_000)))
}
if wants("secretstream_64k_mb_per_s") {
    let rate = try secretStreamThroughput(messageSize: 65536, total: options.referenceBytes)
    results.append(record("secretstream_64k_mb_per_s", unit: "MB/s", value: rate))
}
if wants("secretstream_1k_mb_per_s") {
    let rate = try secretStreamThroughput(messageSize: 1024, total: options.referenceBytes / 4)
    results.append(record("secretstream_1k_mb_per_s", unit: "MB/s", value: rate))
}
if wants("loopback_tcp_mb_per_s") {
    results.append(record("loopback_tcp_mb_per_s", unit: "MB/s", value: loopbackTCPThroughput(total: options.referenceBytes)))
}
if wants("loopback_rtt_p50_ms", "loopback_rtt_p99_ms") {
    let rtt = loopbackRoundTrip(rounds: options.quick ? 5_000 : 20_000)
    results.append(record("loopback_rtt_p50_ms", unit: "ms", value: rtt.p50))
    results.append(record("loopback_rtt_p99_ms", unit: "ms", value: rtt.p99))
}

do {
    // The top level stays synchronous (valgrind cannot run a program whose main thread waits in
    // dispatch_main, as an async top level does): the node figures run in a task.
    results += try runBlocking { [parleyBinary] in
        var figures = try await catchUpBenchmark(binary: parleyBinary)
        figures += try await clusterBenchmark(nodes: 3, idle: true, binary: parleyBinary)
        figures += try await clusterBenchmark(nodes: 10, idle: false, binary: parleyBinary)
        figures += try await webLatencyBenchmark(nodes: 3, binary: parleyBinary)
        figures += try await webLatencyBenchmark(nodes: 10, binary: parleyBinary)
        figures += try await memoryBenchmark(binary: parleyBinary)
        return figures
    }
} catch {
    FileHandle.standardError.write(Data("parley-bench: \(error)\n".utf8))
    report(results.compactMap { $0 }, jsonPath: options.out)
    try? FileManager.default.removeItem(atPath: scratch)  // `exit` skips the `defer` above
    exit(1)
}

report(results.compactMap { $0 }, jsonPath: options.out)
