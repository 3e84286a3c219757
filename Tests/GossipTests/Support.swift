import Gossip
import Identity
import Replica
import Store
import TestSupport
import Testing
import Wire

// MARK: - Data

let lobby = PartitionDescriptor.room(RoomName("lobby")!)
let kitchen = PartitionDescriptor.room(RoomName("kitchen")!)

/// `count` ops by each author in `partition`, interleaved author by author (chain order kept).
func makeOps(_ factory: inout OpFactory, in partition: PartitionDescriptor, authors: [Identity], perAuthor count: Int) -> [Operation] {
    var ops: [Operation] = []
    ops.reserveCapacity(authors.count * count)
    for round in 0..<count {
        for author in authors { ops.append(factory.make(post("\(author.id.short) \(round)"), in: partition.id, by: author)) }
    }
    return ops
}

/// Applies ops to a store and checks that each was applied.
func load(_ store: ReplicaStore, _ ops: [Operation], sourceLocation: SourceLocation = #_sourceLocation) throws {
    let outcomes = try store.apply(ops, nowMillis: Fixtures.now())
    let failed = outcomes.filter { $0 != .applied }
    #expect(failed.isEmpty, "not applied: \(failed.prefix(3))", sourceLocation: sourceLocation)
}

// MARK: - A node: a real store, one session, and a shell that carries out directives

/// The shell of one node with one link, as the node runtime will be: it executes directives
/// against its in-memory store, answers loads and applies at once, and queues frames for the peer.
final class TestNode {
    let name: String
    let identity: Identity
    let store: ReplicaStore
    var policy: SyncPolicy
    var peer: UserID
    var session: GossipSession
    var now = Fixtures.now()
    /// The sync fields of the peer's link HELLO, handed to `start`.
    var peerHello = GossipConfiguration().hello

    /// Frames waiting to be delivered to the peer.
    var outgoing: [[UInt8]] = []
    /// Every message sent, in order.
    var sent: [SyncMessage] = []
    var bytesSent = 0
    var closedWith: GossipError?
    var learned: [PartitionDescriptor] = []
    var progress: (fetched: Int, wanted: Int) = (0, 0)
    /// Claims asked for and released (the node grants every one: there is one link).
    var claims = 0
    var releases = 0
    /// Every progress report, in order.
    var progressReports: [(fetched: Int, wanted: Int)] = []
    var appliedOps = 0
    /// When false, `.learnPartition` is only recorded.
    var carriesLearnedPartitions = true

    init(_ name: String, identity: Identity, store: ReplicaStore, peer: UserID, configuration: GossipConfiguration = GossipConfiguration()) {
        self.name = name
        self.identity = identity
        self.store = store
        self.peer = peer
        policy = SyncPolicy(localUser: identity.id, carriesForOthers: false)  // members only; store and forward: SyncPolicyTests
        session = GossipSession(configuration: configuration)
    }

    /// This node's partitions as offered to the peer.
    func summaries() throws -> [PartitionSummary] {
        try policy.summaries(of: store.log.partitions().map { ($0.descriptor, try store.log.digest($0.id)) }, for: peer)
    }

    func start() throws { try run(session.start(local: summaries(), peer: peerHello, now: now)) }

    func receive(_ frame: [UInt8]) throws { try run(session.onFrame(frame, now: now)) }

    /// Writes a local op and tells the session, as the node does after `post`.
    @discardableResult
    func author(_ text: String, in partition: PartitionDescriptor) throws -> Operation {
        let op = try store.author(post(text), in: partition.id, by: identity, nowMillis: now)
        try run(session.onNewLocalOp(op, now: now))
        return op
    }

    /// Directives waiting to be carried out, and whether a `run` is carrying them out.
    private var queue: [GossipDirective] = []
    private var draining = false

    /// Carries out directives in order, as the node's `GossipHandler` does: answers to loads and
    /// applies are fed back at once, and what they return is queued behind the directives
    /// already waiting.
    func run(_ directives: [GossipDirective]) throws {
        queue += directives
        guard !draining else { return }
        draining = true
        defer {
            draining = false
            queue = []
        }
        var next = 0
        while next < queue.count {
            let directive = queue[next]
            next += 1
            try perform(directive)
        }
    }

    private func perform(_ directive: GossipDirective) throws {
        switch directive {
        case .send(let message):
            let frame = message.encode()
            sent.append(message)
            bytesSent += frame.count
            outgoing.append(frame)
        case .loadVector(let id):
            try run(session.onLocalVector(id, heads: store.log.heads(id), now: now))
        case .loadOps(let id, let author, let from, let limit):
            try run(session.onOpsLoaded(id, author: author, ops: store.log.ops(in: id, author: author, fromSeq: from, limit: limit), now: now))
        case .loadForkProofs(let id):
            try run(session.onForkProofsLoaded(id, proofs: store.log.forkProofs(id), now: now))
        case .refreshSummaries:
            try run(session.onLocalSummaries(summaries(), now: now))
        case .apply(let ops):
            let outcomes = try store.apply(ops, nowMillis: now)
            var newProofs: [ForkProof] = []
            for case .forkDetected(let proof) in outcomes { newProofs.append(proof) }
            appliedOps += outcomes.filter { $0 == .applied }.count
            try run(session.onApplied(ops, outcomes: outcomes, now: now))
            for (op, outcome) in zip(ops, outcomes) where outcome == .applied { try run(session.onNewLocalOp(op, now: now)) }
            for proof in newProofs { try run(session.onLocalForkProof(proof, now: now)) }
        case .applyForkProof(let proof):
            try store.forks.apply(proof)
        case .learnPartition(let descriptor):
            learned.append(descriptor)
            if carriesLearnedPartitions, policy.shouldCarry(descriptor, offeredBy: peer) {
                try store.log.ensurePartition(descriptor, joined: false)
                try run(session.onLocalSummaries(summaries(), now: now))
            }
        case .close(let reason):
            closedWith = reason
        case .progress(let fetched, let wanted):
            progress = (fetched, wanted)
            progressReports.append((fetched, wanted))
        case .scheduleTick:
            break
        case .claimChain(let partition, let author):
            // One link: the chain is always free.
            claims += 1
            try run(session.onChainClaim(partition, author: author, granted: true, now: now))
        case .releaseChain:
            releases += 1
        case .pushReceived:
            // One link: its peer is every chain's pusher.
            break
        }
    }

    /// Messages of one type sent so far.
    func sentCount(_ type: SyncMessageType) -> Int { sent.filter { $0.type == type }.count }

    /// Ops carried in OPS messages sent so far.
    var opsSentInBatches: Int {
        sent.reduce(0) { total, message in
            if case .ops(let batch) = message { total + batch.ops.count } else { total }
        }
    }
}

/// Two nodes joined by an in-memory link that delivers frames in order.
struct TestLink {
    let a: TestNode
    let b: TestNode

    init(_ a: TestNode, _ b: TestNode) {
        (self.a, self.b) = (a, b)
    }

    /// Starts both sessions and delivers until the link is quiet.
    func connect(sourceLocation: SourceLocation = #_sourceLocation) throws {
        try a.start()
        try b.start()
        try settle(sourceLocation: sourceLocation)
    }

    /// Delivers frames both ways, one at a time, until none is left (or a side closed).
    func settle(maxFrames: Int = 1_000_000, sourceLocation: SourceLocation = #_sourceLocation) throws {
        var delivered = 0
        while !a.outgoing.isEmpty || !b.outgoing.isEmpty {
            if !a.outgoing.isEmpty { try b.receive(a.outgoing.removeFirst()) }
            if !b.outgoing.isEmpty { try a.receive(b.outgoing.removeFirst()) }
            delivered += 1
            guard delivered < maxFrames else {
                Issue.record("the link did not settle", sourceLocation: sourceLocation)
                return
            }
        }
    }
}

/// Two nodes, each with its own store, linked to each other.
func makeLink(
    _ storeA: ReplicaStore, _ storeB: ReplicaStore, identities: (Identity, Identity) = (Fixtures.identity(10), Fixtures.identity(11)),
    configuration: GossipConfiguration = GossipConfiguration()
) -> TestLink {
    let a = TestNode("A", identity: identities.0, store: storeA, peer: identities.1.id, configuration: configuration)
    let b = TestNode("B", identity: identities.1, store: storeB, peer: identities.0.id, configuration: configuration)
    return TestLink(a, b)
}

// MARK: - Driving one session by hand (a scripted peer)

/// The sync fields of a peer's link HELLO with the default limits.
let standardHello = SyncHello(protocolVersion: GossipConfiguration.protocolVersion, maxFrame: UInt32(SyncMessage.maxBytes), features: 0)

/// A session started with `summaries` on a link whose peer announced `standardHello`.
func startedSession(
    _ summaries: [PartitionSummary], configuration: GossipConfiguration = GossipConfiguration(),
    now: UInt64 = 0
) -> GossipSession {
    var session = GossipSession(configuration: configuration)
    _ = session.start(local: summaries, peer: standardHello, now: now)
    return session
}

/// The messages among directives.
func messages(_ directives: [GossipDirective]) -> [SyncMessage] {
    directives.compactMap { if case .send(let message) = $0 { message } else { nil } }
}

/// The close reason among directives, if any.
func closeReason(_ directives: [GossipDirective]) -> GossipError? {
    directives.lazy.compactMap { if case .close(let reason) = $0 { reason } else { nil } }.first
}

extension PartitionDigest {
    /// The digest of an empty partition.
    static let empty = PartitionDigest(heads: [])
}

// MARK: - One session driven by hand

/// A session in sync with its peer on #lobby (equal digests), so every new op is pushed.
func sessionInSync(with hello: SyncHello, configuration: GossipConfiguration = GossipConfiguration()) -> GossipSession {
    var session = GossipSession(configuration: configuration)
    _ = session.start(local: [PartitionSummary(descriptor: lobby, digest: .empty, sharing: .ifPeerHolds)], peer: hello, now: 0)
    _ = session.onMessage(.summary(more: false, entries: [SummaryEntry(lobby, digest: .empty, revealDescriptor: false)]), now: 0)
    return session
}

/// `count` posts by `author` in #lobby, its chain from seq 1.
func lobbyPosts(by author: Identity, count: Int) -> [Operation] {
    var factory = OpFactory()
    return (0..<count).map { factory.make(post("\(author.id.short) \($0)"), in: lobby.id, by: author) }
}

/// The ops pushed (NEW_OP) among `directives`.
func pushedOps(_ directives: [GossipDirective]) -> [Operation] {
    messages(directives).compactMap { if case .newOp(let op) = $0 { op } else { nil } }
}
