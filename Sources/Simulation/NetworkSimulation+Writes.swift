import Gossip
import Identity
import Replica

/// Writes and their delivery: running nodes post into the room at planned times; every node
/// records by how many hops each post reached it and the simulation tallies latency, copies and
/// bytes; at the end the verdict says whether every node holds every post.
extension NetworkSimulation {
    /// Spreads the writes uniformly over the time between the start spread and the settling time
    /// at the end.
    mutating func planWrites() {
        guard configuration.writes > 0 else { return }
        let from = configuration.startSpread
        let until = max(from + 1, configuration.duration - min(configuration.duration, configuration.settle))
        var times = (0..<configuration.writes).map { _ in from + random.next(below: until - from) }
        times.sort()
        for time in times { schedule(.write, at: time) }
        for node in nodes { node.hopsPlusOne = [UInt8](repeating: 0, count: configuration.writes) }
    }

    /// A random running node posts: the op is signed, stored and handed to its sessions, as a
    /// real node's local write is.
    mutating func write() {
        let running = nodes.indices.filter { nodes[$0].isRunning }
        guard let author = random.element(of: running) else {
            delivery.writesSkipped += 1
            return
        }
        let node = nodes[author]
        let number = delivery.writeTimes.count
        let (seq, prev) = node.replica.next(in: Self.room.id, author: node.id)
        let body = OperationBody.post(text: "post \(number) by node \(author)", attachments: [], location: nil, replyTo: nil).encoded
        let op = Operation.sign(
            type: .post, partition: Self.room.id, seq: seq, prev: prev, hlc: HLC(wallMillis: Self.epochMillis + now, counter: 0), body: body,
            by: node.identity)
        node.replica.append(op)
        delivery.verified.insert(op)
        delivery.writeNumbers[op.id] = number
        delivery.writeTimes.append(now)
        node.hopsPlusOne[number] = 1
        delivery.held += 1
        delivery.lastWriteAt = now
        feedAll(author) { session, now in session.onNewLocalOp(op, now: now) }
    }

    /// The simulated clock's zero on the wall (2026-01-01), for op stamps.
    static let epochMillis: UInt64 = 1_767_225_600_000

    /// An op applied at `index`, received from `peer`: one hop more than it took to reach `peer`.
    mutating func noteArrival(_ op: Operation, at index: Int, from peer: Int) {
        guard let number = delivery.writeNumbers[op.id] else { return }
        let hops = Int(nodes[peer].hopsPlusOne[number])  // the hops to `peer`, plus one
        nodes[index].hopsPlusOne[number] = UInt8(clamping: hops + 1)
        delivery.hops[min(hops, DeliveryTally.maxHops), default: 0] += 1
        let latency = Int(now - delivery.writeTimes[number])
        delivery.latencies[latency, default: 0] += 1
        delivery.deliveries += 1
        delivery.held += 1
        if delivery.held == configuration.writes * nodes.count { delivery.completeAt = now }
    }

    mutating func deliveryReport() -> DeliveryReport {
        let writes = delivery.writeTimes.count
        let id = Self.room.id
        let digests = Set(nodes.indices.map { nodes[$0].replica.digest(id) })
        let everywhere = nodes.allSatisfy { $0.replica.count(id) == writes }
        var lost = 0
        for number in 0..<writes where nodes.contains(where: { $0.hopsPlusOne[number] == 0 }) { lost += 1 }
        let deliveries = max(1, delivery.deliveries)
        let settledFrom = max(delivery.lastWriteAt, configuration.partition?.upperBound ?? 0)
        return DeliveryReport(
            writes: writes, converged: digests.count == 1 && everywhere && lost == 0, lostWrites: lost,
            hops: DeliveryReport.Percentiles(delivery.hops), latencyMillis: DeliveryReport.Percentiles(delivery.latencies),
            copiesPerOp: Self.rounded(Double(delivery.opsReceived) / Double(deliveries)),
            bytesPerOp: Self.rounded(Double(delivery.bytes) / Double(deliveries)),
            messagesPerOp: Self.rounded(Double(delivery.messages) / Double(deliveries)),
            convergeMillis: delivery.completeAt.map { $0 >= settledFrom ? $0 - settledFrom : 0 },
            violations: delivery.violations, rejectedOps: delivery.rejected, unexpectedDirectives: delivery.unexpected)
    }

    static func rounded(_ value: Double) -> Double { (value * 1_000).rounded() / 1_000 }
}

/// What the writes measured as the run went.
struct DeliveryTally {
    static let maxHops = 255
    /// Every op whose hash and signature were checked (`SimulatedReplica.apply`).
    var verified: Set<Operation> = []
    var writeNumbers: [OpID: Int] = [:]
    var writeTimes: [UInt64] = []
    var writesSkipped = 0
    var lastWriteAt: UInt64 = 0
    /// Ops held in all (writes at their authors, and deliveries), and when that reached every
    /// write on every node.
    var held = 0
    var completeAt: UInt64?
    var deliveries = 0
    /// Deliveries by hops, and by simulated milliseconds after the write.
    var hops: [Int: Int] = [:]
    var latencies: [Int: Int] = [:]
    /// Ops received in NEW_OP and OPS messages (new or not), messages sent, and their bytes.
    var opsReceived = 0
    var messages = 0
    var bytes = 0
    /// Links a session closed for a violation, ops a replica refused, and directives an honest
    /// run never gives (a fork proof, an unknown partition): each 0 in a sound run.
    var violations = 0
    var rejected = 0
    var unexpected = 0
}
