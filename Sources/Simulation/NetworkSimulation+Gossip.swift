import Gossip
import Identity
import Replica

/// The gossip shell of every simulated node: what NodeRuntime's `GossipHandler` does for a real
/// node, over the simulated replica and links, with no protocol decision of its own. Each
/// session's directives are carried out in order; loads answer from the replica; an apply's
/// accepted ops go to every session of the node; chain claims go to one session at a time; one
/// pusher is kept per chain and a redundant pusher hears `onRedundantPush`.
extension NetworkSimulation {
    /// A sync message's bytes on a link beyond its own: the frame's length prefix and the
    /// secret stream's tag (docs/DESIGN.md §4.2).
    static let frameOverheadBytes = 4 + 17

    /// Starts a session at each end of a new link (both are ready at once here).
    mutating func openSessions(_ pair: Pair) {
        guard let link = linkStates[pair]?.id else { return }
        for (side, peer) in [(pair.a, pair.b), (pair.b, pair.a)] {
            let summaries = self.summaries(side, for: peer)
            nodes[side].sessions[peer] = SimulatedNode.SessionEntry(link: link, session: GossipSession(configuration: gossip))
            let hello = gossip.hello
            feed(side, peer) { session, now in session.start(local: summaries, peer: hello, now: now) }
        }
    }

    /// A link ended at `index`'s end: its session goes, with its claims and the chains it pushed
    /// (`GossipHandler.linkClosed`).
    mutating func closeSession(_ index: Int, peer: Int) {
        let node = nodes[index]
        guard node.sessions.removeValue(forKey: peer) != nil else { return }
        for key in node.refused.keys { node.refused[key]?.remove(peer) }
        for (key, holder) in node.claims.sorted(by: { $0.key.author < $1.key.author }) where holder == peer { release(key, at: index, by: peer) }
        let lost = node.pushers.filter { $0.value == peer }.map(\.key).sorted()
        guard !lost.isEmpty else { return }
        for key in lost { node.pushers[key] = nil }
        feedAll(index) { session, now in session.onPushersLost(lost, now: now) }
    }

    /// The node's summaries for `peer` (`SyncPolicy`, as a real node computes them).
    mutating func summaries(_ index: Int, for peer: Int) -> [PartitionSummary] {
        let digest = nodes[index].replica.digest(Self.room.id)
        return SyncPolicy(localUser: nodes[index].id).summaries(of: [(Self.room, digest)], for: nodes[peer].id)
    }

    /// A message arrives: counted, then handed to the session of its link, if that still stands.
    mutating func deliver(_ message: SyncMessage, from: Int, to: Int, link: UInt64) {
        guard nodes[to].sessions[from]?.link == link else { return }
        switch message {
        case .newOp: delivery.opsReceived += 1
        case .ops(let batch): delivery.opsReceived += batch.ops.count
        default: break
        }
        feed(to, from) { session, now in session.onMessage(message, now: now) }
    }

    /// Hands one event to `index`'s session with `peer` and carries out what it asks (and what
    /// that leads to), in order; while directives are being carried out it only queues them.
    mutating func feed(_ index: Int, _ peer: Int, _ event: (inout GossipSession, UInt64) -> [GossipDirective]) {
        let node = nodes[index]
        guard let entry = node.sessions[peer] else { return }
        let directives = event(&entry.session, now)
        for directive in directives { node.work.append((peer, entry.link, directive)) }
        guard !node.draining else { return }
        node.draining = true
        var next = 0
        while next < node.work.count {
            let (peer, link, directive) = node.work[next]
            next += 1
            guard node.sessions[peer]?.link == link else { continue }
            perform(directive, at: index, for: peer, link: link)
        }
        node.work.removeAll(keepingCapacity: true)
        node.draining = false
    }

    /// Hands one event to every session of the node.
    mutating func feedAll(_ index: Int, _ event: (inout GossipSession, UInt64) -> [GossipDirective]) {
        for peer in nodes[index].sessionOrder {
            feed(index, peer, event)
        }
    }

    /// Carries out one directive (`GossipHandler.perform`).
    mutating func perform(_ directive: GossipDirective, at index: Int, for peer: Int, link: UInt64) {
        let node = nodes[index]
        switch directive {
        case .send(let message):
            send(message, from: index, to: peer, link: link)
        case .loadVector(let id):
            let heads = node.replica.heads(id)
            feed(index, peer) { session, now in session.onLocalVector(id, heads: heads, now: now) }
        case .loadOps(let id, let author, let fromSeq, let limit):
            let ops = node.replica.ops(in: id, author: author, fromSeq: fromSeq, limit: limit)
            feed(index, peer) { session, now in session.onOpsLoaded(id, author: author, ops: ops, now: now) }
        case .loadForkProofs(let id):
            feed(index, peer) { session, now in session.onForkProofsLoaded(id, proofs: [], now: now) }
        case .refreshSummaries:
            let summaries = self.summaries(index, for: peer)
            feed(index, peer) { session, now in session.onLocalSummaries(summaries, now: now) }
        case .apply(let ops):
            apply(ops, at: index, from: peer)
        case .applyForkProof, .learnPartition:
            // Honest authors never fork, and every node holds the one room from the start.
            delivery.unexpected += 1
        case .close(let reason):
            if reason.isViolation { delivery.violations += 1 }
            closeLink(Pair(index, peer), by: index)
        case .progress:
            break
        case .claimChain(let partition, let author):
            let key = ChainKey(partition: partition, author: author)
            let granted = node.claims[key] == nil || node.claims[key] == peer
            if granted {
                node.claims[key] = peer
            } else {
                node.refused[key, default: []].insert(peer)
            }
            feed(index, peer) { session, now in session.onChainClaim(partition, author: author, granted: granted, now: now) }
        case .releaseChain(let partition, let author):
            release(ChainKey(partition: partition, author: author), at: index, by: peer)
        case .pushReceived(let partition, let author, let duplicate):
            notePush(ChainKey(partition: partition, author: author), at: index, from: peer, duplicate: duplicate)
        case .scheduleTick(let after):
            guard let entry = node.sessions[peer] else { return }
            let due = now + after
            entry.timerDue = due
            schedule(.gossipTick(index, peer: peer, link: link, due: due), at: due)
        }
    }

    /// Puts a message on the link: it arrives after a latency, never before the one sent before it.
    mutating func send(_ message: SyncMessage, from: Int, to: Int, link: UInt64) {
        let pair = Pair(from, to)
        guard var state = linkStates[pair], state.id == link else { return }
        delivery.messages += 1
        delivery.bytes += message.encode().count + Self.frameOverheadBytes
        var arrival = now + latency()
        if to == pair.a {
            arrival = max(arrival, state.lastArrivalAtA)
            state.lastArrivalAtA = arrival
        } else {
            arrival = max(arrival, state.lastArrivalAtB)
            state.lastArrivalAtB = arrival
        }
        linkStates[pair] = state
        schedule(.message(message, from: from, to: to, link: link), at: arrival)
    }

    /// `.apply`: the replica's outcomes go back to the session, then every accepted op to every
    /// session of the node, in order.
    mutating func apply(_ ops: [Operation], at index: Int, from peer: Int) {
        let outcomes = nodes[index].replica.apply(ops, verified: &delivery.verified)
        feed(index, peer) { session, now in session.onApplied(ops, outcomes: outcomes, now: now) }
        for (op, outcome) in zip(ops, outcomes) {
            switch outcome {
            case .applied:
                noteArrival(op, at: index, from: peer)
                feedAll(index) { session, now in session.onNewLocalOp(op, now: now) }
            case .rejected:
                delivery.rejected += 1
            case .duplicate, .pending, .forkDetected:
                break
            }
        }
    }

    /// Ends `peer`'s claim on a chain; the sessions refused it meanwhile may try again.
    mutating func release(_ key: ChainKey, at index: Int, by peer: Int) {
        let node = nodes[index]
        guard node.claims[key] == peer else { return }
        node.claims[key] = nil
        for waiting in (node.refused.removeValue(forKey: key) ?? []).sorted() {
            feed(index, waiting) { session, now in session.onChainReleased(key.partition, author: key.author, now: now) }
        }
    }

    /// `.pushReceived`: the chain's author, when linked, is its pusher; otherwise the first link
    /// that delivers it. A duplicate push from another link is redundant (`GossipHandler.notePush`).
    mutating func notePush(_ key: ChainKey, at index: Int, from peer: Int, duplicate: Bool) {
        let node = nodes[index]
        if nodes[peer].id == key.author {
            node.pushers[key] = peer
            return
        }
        guard let pusher = node.pushers[key] else {
            node.pushers[key] = peer
            return
        }
        guard duplicate, pusher != peer else { return }
        feed(index, peer) { session, now in session.onRedundantPush(key.partition, author: key.author, now: now) }
    }
}
