import Discovery
import Gossip
import Identity
import Replica
import Wire

/// Many nodes in one process, in simulated time (docs/DESIGN.md §8): each node runs the real
/// pure protocol instances — a `Discovery` with its overlay, a `GossipSession` per link, the
/// log's apply rules over an in-memory replica (`SimulatedReplica`) — and the simulation is their
/// shell and their network. It carries beacons to every node in the sender's part of the
/// network (with latency and loss), turns dials into links, carries each link's sync messages in
/// order after a latency, closes links that crash, churn or a partition ends, has nodes write
/// into one room, and measures the link graph and the delivery of every write (hops, simulated
/// latency, copies, bytes).
///
/// One seed drives everything (identities, start times, latencies, losses, churn, writers, every
/// node's own picks), and events at one millisecond run in the order they were scheduled, so the
/// same configuration gives the same report.
public struct NetworkSimulation {
    public let configuration: SimulationConfiguration
    var random: SeededRandom
    var queue = EventQueue<Event>()
    var now: UInt64 = 0
    var nodes: [SimulatedNode] = []
    var indexOf: [UserID: Int] = [:]
    /// Links up, each pair once (smaller index first), and each one's state.
    var links: Set<Pair> = []
    var linkStates: [Pair: LinkState] = [:]
    var nextLinkID: UInt64 = 0
    /// Each node's part of the network while a partition lasts (nil: one network).
    var parts: [Int]?
    var counters = Counters()
    /// The first sample after the partition healed at which a link crossed it again.
    var healedAt: UInt64?
    /// What the writes measured (`NetworkSimulation+Writes`).
    var delivery = DeliveryTally()

    let beaconKey = BeaconKey(networkKey: [UInt8](repeating: 0x5A, count: 32))
    static let broadcast = PeerEndpoint(host: "10.255.255.255", port: 7747)
    /// The room every simulated node holds and writes into.
    static let room = PartitionDescriptor.room(RoomName("lobby")!)
    let gossip: GossipConfiguration

    struct Pair: Hashable, Comparable {
        let a: Int, b: Int
        init(_ x: Int, _ y: Int) { (a, b) = x < y ? (x, y) : (y, x) }
        static func < (l: Pair, r: Pair) -> Bool { (l.a, l.b) < (r.a, r.b) }
    }

    /// A link's identity (a new one each time a pair links) and when the last message each way
    /// arrives: a link is a TCP stream, so its messages arrive in the order they were sent.
    struct LinkState {
        let id: UInt64
        var lastArrivalAtA: UInt64 = 0
        var lastArrivalAtB: UInt64 = 0
    }

    enum Event {
        case start(Int)
        case tick(Int, due: UInt64, life: Int)
        /// A broadcast beacon reaching one node: decoded (and its MAC checked) once when it was sent.
        case beacon(Result<Beacon, BeaconError>, from: Int, to: Int)
        case dialDone(from: Int, to: Int, life: Int)
        case linkLost(Int, peer: Int, life: Int)
        case pings
        case crash(Int)
        case restart(Int)
        case partition
        case heal
        case sample
        /// A link across the partition times out, if the partition still stands.
        case idleCheck(Pair)
        /// A sync message arrives at `to` on link `link`.
        case message(SyncMessage, from: Int, to: Int, link: UInt64)
        /// A session's timer fires.
        case gossipTick(Int, peer: Int, link: UInt64, due: UInt64)
        /// A running node writes a message into the room.
        case write
    }

    struct Counters {
        var beaconsDelivered = 0
        var beaconsLost = 0
        var dials = 0
        var dialsFailed = 0
        var disconnects = 0
        var crashes = 0
    }

    public init(_ configuration: SimulationConfiguration) {
        self.configuration = configuration
        random = SeededRandom(seed: configuration.seed)
        var gossip = GossipConfiguration()
        gossip.treePush = configuration.treePush
        self.gossip = gossip.onOverlay(activeSize: configuration.overlay?.activeSize)
        for index in 0..<configuration.nodes {
            var seed = [UInt8](repeating: 0, count: 32)
            for byte in 0..<8 { seed[byte] = UInt8(truncatingIfNeeded: random.next() >> (8 * UInt64(byte))) }
            seed[8] = UInt8(truncatingIfNeeded: index)
            seed[9] = UInt8(truncatingIfNeeded: index >> 8)
            seed[10] = UInt8(truncatingIfNeeded: index >> 16)
            let identity = try! Identity(seed: seed)
            nodes.append(SimulatedNode(index: index, identity: identity))
            indexOf[identity.id] = index
            nodes[index].replica.hold(Self.room.id)
        }
    }

    static func host(_ index: Int) -> String { "10.\(index / 65_536 % 256).\(index / 256 % 256).\(index % 256)" }

    func index(of endpoint: PeerEndpoint) -> Int? {
        let parts = endpoint.host.split(separator: ".").compactMap { Int($0) }
        guard parts.count == 4, parts[0] == 10 else { return nil }
        let index = parts[1] * 65_536 + parts[2] * 256 + parts[3]
        return index < nodes.count ? index : nil
    }

    // MARK: Running

    /// Runs to `configuration.duration` and reports.
    public mutating func run() -> SimulationReport {
        for index in nodes.indices {
            schedule(.start(index), at: random.next(below: configuration.startSpread + 1))
        }
        schedule(.pings, at: configuration.pingInterval)
        schedule(.sample, at: 1_000)
        planChurn()
        planWrites()
        if let partition = configuration.partition {
            schedule(.partition, at: partition.lowerBound)
            schedule(.heal, at: partition.upperBound)
        }
        while let (time, event) = queue.next(), time <= configuration.duration {
            now = time
            handle(event)
        }
        now = configuration.duration
        return SimulationReport(overlay: overlayReport(), delivery: deliveryReport())
    }

    mutating func schedule(_ event: Event, at time: UInt64) {
        queue.schedule(event, at: time)
    }

    /// One-way latency for one message: the base and a random part of the jitter.
    mutating func latency() -> UInt64 {
        configuration.latency.lowerBound + random.next(below: configuration.latency.upperBound - configuration.latency.lowerBound + 1)
    }

    func reachable(_ a: Int, _ b: Int) -> Bool {
        nodes[a].isRunning && nodes[b].isRunning && (parts.map { $0[a] == $0[b] } ?? true)
    }

    mutating func handle(_ event: Event) {
        switch event {
        case .start(let index), .restart(let index):
            startNode(index)
        case .tick(let index, let due, let life):
            guard nodes[index].life == life, nodes[index].timerDue == due else { return }
            nodes[index].timerDue = nil
            perform(index, nodes[index].discovery!.onTick(now: now))
        case .beacon(let decoded, let from, let to):
            guard nodes[to].isRunning, reachable(from, to) else { return }
            counters.beaconsDelivered += 1
            let source = PeerEndpoint(host: Self.host(from), port: 7747)
            perform(to, nodes[to].discovery!.onBeacon(from: source, now: now) { () throws(BeaconError) in try decoded.get() })
        case .dialDone(let from, let to, let life):
            guard nodes[from].life == life, nodes[from].isRunning else { return }
            let endpoint = PeerEndpoint(host: Self.host(to), port: 7748)
            guard reachable(from, to) else {
                counters.dialsFailed += 1
                perform(from, nodes[from].discovery!.onDialFailed(peer: nodes[to].id, at: endpoint, now: now))
                return
            }
            let pair = Pair(from, to)
            if links.insert(pair).inserted {
                nextLinkID += 1
                linkStates[pair] = LinkState(id: nextLinkID)
                perform(to, nodes[to].discovery!.onLinkEstablished(peer: nodes[from].id, via: nil, now: now))
                if links.contains(pair) { openSessions(pair) }
            }
            // Both may have dialed: one link stays, and the dialer hears its dial came through.
            if links.contains(pair), nodes[from].isRunning {
                perform(from, nodes[from].discovery!.onLinkEstablished(peer: nodes[to].id, via: endpoint, now: now))
            }
        case .linkLost(let index, let peer, let life):
            guard nodes[index].life == life, nodes[index].isRunning else { return }
            closeSession(index, peer: peer)
            perform(index, nodes[index].discovery!.onLinkLost(peer: nodes[peer].id, now: now))
        case .pings:
            for pair in links.sorted() where reachable(pair.a, pair.b) {
                perform(pair.a, nodes[pair.a].discovery!.onLinkPing(peer: nodes[pair.b].id, now: now))
                perform(pair.b, nodes[pair.b].discovery!.onLinkPing(peer: nodes[pair.a].id, now: now))
            }
            schedule(.pings, at: now + configuration.pingInterval)
        case .crash(let index):
            crash(index)
        case .partition:
            parts = nodes.indices.map { $0 < nodes.count / 2 ? 0 : 1 }
            for pair in links.sorted() where parts![pair.a] != parts![pair.b] {
                schedule(.idleCheck(pair), at: now + configuration.idleTimeout)
            }
        case .heal:
            parts = nil
        case .idleCheck(let pair):
            guard links.contains(pair), let parts, parts[pair.a] != parts[pair.b] else { return }
            closeLink(pair, by: nil)
        case .sample:
            if let partition = configuration.partition, now >= partition.upperBound, healedAt == nil, spansHalves() { healedAt = now }
            schedule(.sample, at: now + 1_000)
        case .message(let message, let from, let to, let link):
            deliver(message, from: from, to: to, link: link)
        case .gossipTick(let index, let peer, let link, let due):
            guard let entry = nodes[index].sessions[peer], entry.link == link, entry.timerDue == due else { return }
            entry.timerDue = nil
            feed(index, peer) { session, now in session.onTick(now: now) }
        case .write:
            write()
        }
    }

    mutating func startNode(_ index: Int) {
        var settings = DiscoveryConfiguration(
            identity: nodes[index].id, instanceID: InstanceID(raw: random.next()), tcpPort: 7748, beaconKey: beaconKey, targets: [Self.broadcast])
        settings.overlay = configuration.overlay
        settings.randomSeed = random.next()
        settings.maxPeers = configuration.maxPeers
        nodes[index].life += 1
        nodes[index].discovery = Discovery(configuration: settings)
        nodes[index].timerDue = nil
        perform(index, nodes[index].discovery!.start(now: now))
    }

    /// Stops a node at once (a crash: no leaving beacon); its peers see its links close. Its
    /// replica stays (it is on disk), its sessions and what they knew are gone.
    mutating func crash(_ index: Int) {
        guard nodes[index].isRunning else { return }
        counters.crashes += 1
        for pair in links.sorted() where pair.a == index || pair.b == index {
            closeLink(pair, by: index)
        }
        nodes[index].discovery = nil
        nodes[index].life += 1
        nodes[index].resetGossip()
        schedule(.restart(index), at: now + configuration.downtime)
    }

    /// Closes a link: the side that closed it (if any) hears at once, the other a latency later.
    mutating func closeLink(_ pair: Pair, by closer: Int?) {
        guard links.remove(pair) != nil else { return }
        linkStates[pair] = nil
        for side in [pair.a, pair.b] where nodes[side].isRunning {
            let other = side == pair.a ? pair.b : pair.a
            schedule(.linkLost(side, peer: other, life: nodes[side].life), at: side == closer ? now : now + latency())
        }
    }

    /// Crashes `churn` of the nodes once each, at random times after the start spread, each back
    /// after `downtime`.
    mutating func planChurn() {
        let count = Int((configuration.churn * Double(nodes.count)).rounded())
        var order = Array(nodes.indices)
        order.shuffle(using: &random)
        let spare = Int64(configuration.duration) - Int64(configuration.startSpread + configuration.downtime + configuration.settle)
        let window = UInt64(max(1, spare))
        for index in order.prefix(count) {
            schedule(.crash(index), at: configuration.startSpread + random.next(below: window))
        }
    }

    /// Carries out one node's discovery directives.
    mutating func perform(_ index: Int, _ directives: [DiscoveryDirective]) {
        for directive in directives {
            switch directive {
            case .sendBeacon(let bytes, _):
                let decoded = Result { () throws(BeaconError) in try Beacon(decoding: bytes, key: beaconKey) }
                for target in nodes.indices where target != index && nodes[target].isRunning && reachable(index, target) {
                    if configuration.beaconLoss > 0, random.chance(configuration.beaconLoss) {
                        counters.beaconsLost += 1
                        continue
                    }
                    schedule(.beacon(decoded, from: index, to: target), at: now + latency())
                }
            case .connect(let peer, let endpoint):
                guard peer != nil, let target = self.index(of: endpoint) else { continue }
                counters.dials += 1
                schedule(.dialDone(from: index, to: target, life: nodes[index].life), at: now + 2 * latency())
            case .disconnect(let peer):
                guard let other = indexOf[peer] else { continue }
                counters.disconnects += 1
                closeLink(Pair(index, other), by: index)
            case .scheduleTick(let after):
                let due = now + after
                nodes[index].timerDue = due
                schedule(.tick(index, due: due, life: nodes[index].life), at: due)
            case .peerDiscovered, .peerStateChanged, .peerForgotten, .duplicateIdentity:
                break
            }
        }
    }

    // MARK: Measuring the link graph

    /// Whether the running nodes form one component of the link graph.
    func isConnected() -> Bool {
        let running = nodes.indices.filter { nodes[$0].isRunning }
        guard let first = running.first else { return true }
        return distances(from: first).count == running.count
    }

    /// Whether some link joins the two halves a partition made.
    func spansHalves() -> Bool {
        links.contains { ($0.a < nodes.count / 2) != ($0.b < nodes.count / 2) }
    }

    /// Hops from `source` to every node it reaches over links (itself at 0).
    func distances(from source: Int) -> [Int: Int] {
        var neighbours: [Int: [Int]] = [:]
        for pair in links {
            neighbours[pair.a, default: []].append(pair.b)
            neighbours[pair.b, default: []].append(pair.a)
        }
        var distance = [source: 0]
        var frontier = [source]
        while !frontier.isEmpty {
            var next: [Int] = []
            for node in frontier {
                for neighbour in neighbours[node] ?? [] where distance[neighbour] == nil {
                    distance[neighbour] = distance[node]! + 1
                    next.append(neighbour)
                }
            }
            frontier = next
        }
        return distance
    }

    mutating func overlayReport() -> OverlayReport {
        let running = nodes.indices.filter { nodes[$0].isRunning }
        var degree = [Int](repeating: 0, count: nodes.count)
        for pair in links {
            degree[pair.a] += 1
            degree[pair.b] += 1
        }
        let degrees = running.map { degree[$0] }
        var hops: [Int] = []
        var sources = running
        sources.shuffle(using: &random)
        for source in sources.prefix(32) {
            hops += distances(from: source).filter { $0.key != source }.map(\.value)
        }
        hops.sort()
        func percentile(_ p: Double) -> Int { hops.isEmpty ? 0 : hops[min(hops.count - 1, Int(Double(hops.count - 1) * p))] }
        let connected = isConnected()
        return OverlayReport(
            seed: configuration.seed, nodes: nodes.count, running: running.count, connected: connected,
            linksPerNode: .init(max: degrees.max() ?? 0, mean: degrees.isEmpty ? 0 : Double(degrees.reduce(0, +)) / Double(degrees.count)),
            hops: .init(p50: percentile(0.5), p95: percentile(0.95), p99: percentile(0.99), max: hops.last ?? 0),
            healMillis: configuration.partition.flatMap { partition in healedAt.map { $0 - partition.upperBound } },
            dials: counters.dials, dialsFailed: counters.dialsFailed, disconnects: counters.disconnects, crashes: counters.crashes,
            beaconsDelivered: counters.beaconsDelivered)
    }
}
