import Identity
import Replica
import Wire

/// Fetching from the peer: comparing vectors, WANTs with credit, OPS received, and the
/// outcomes of applying them.
extension GossipSession {
    // MARK: - Planning a round

    /// Both vectors of a round are complete: decide, per author, what to fetch, what to probe
    /// and which fork proofs the peer lacks.
    mutating func plan(_ id: PartitionID) {
        guard var partition = shared[id], let exchange = partition.exchange, let localHeads = exchange.local else { return }
        bufferedRemoteHeads -= exchange.remote.count
        partition.exchange = nil
        partition.baseline = .explicit
        shared[id] = partition
        let localByAuthor = Dictionary(localHeads.map { ($0.author, $0) }, uniquingKeysWith: { first, _ in first })
        var proofsMissing = false
        var behindPushers: [ChainKey] = []
        for author in Set(localByAuthor.keys).union(exchange.remote.keys).sorted() {
            let key = ChainKey(partition: id, author: author)
            let mine = localByAuthor[author]
            let theirs = exchange.remote[author]
            var chain = self.chain(key) ?? Chain()
            // Heads only grow, except when a fork proof cuts a chain back: then the vector is the truth.
            chain.peerSeq = theirs?.frozenAt != nil ? theirs?.maxSeq : max(chain.peerSeq ?? 0, theirs?.maxSeq ?? 0)
            chain.localSeq = mine?.frozenAt != nil ? mine?.maxSeq : max(chain.localSeq ?? 0, mine?.maxSeq ?? 0)
            chain.blocked = false
            if let frozenAt = mine?.frozenAt {
                chain.frozen = true
                let peerLacksProof = theirs?.frozenAt.map { $0 > frozenAt } ?? true
                if peerLacksProof, !forksKnownByPeer.contains(ForkPoint(key, seq: frozenAt)) { proofsMissing = true }
            }
            // Two heads at one seq: the branches split at or below it. Probing the peer's op there
            // finds the fork (a frozen chain too: its remaining heads may still differ lower down).
            if let mine, let theirs, mine.maxSeq == theirs.maxSeq, mine.maxSeq > 0, !mine.sameOp(as: theirs), chain.probe == nil {
                chain.probe = Probe(seq: mine.maxSeq, reason: .headsDiffer)
            }
            // The peer holds more of a chain this node asked it to skip: the pusher is quiet or
            // behind, so the peer pushes it again.
            if skipsSent.contains(key), (chain.peerSeq ?? 0) > (chain.localSeq ?? 0) { behindPushers.append(key) }
            // A few ops behind, on a link off the partition's tree: most likely on their way
            // down the tree (on a link of the tree they would have come this way).
            if isLazy(id), let peerSeq = chain.peerSeq, let localSeq = chain.localSeq, peerSeq > localSeq,
                peerSeq - localSeq <= Self.treeGapOps
            {
                awaitTree(key, &chain)
            }
            setChain(key, chain)
            advance(key)
        }
        if proofsMissing { emit(.loadForkProofs(id)) }
        resume(behindPushers)
        pumpWants()
        // Pushes held back by pacing during this round: the next round shows them.
        if pacedPartitions.remove(id) != nil { startExchange(id) }
    }

    // MARK: - WANT

    /// Whether a chain has something to fetch from the peer (its head is ahead, or a probe waits).
    func needsWant(_ chain: Chain) -> Bool {
        guard chain.isIdle, let localSeq = chain.localSeq else { return false }
        if let probe = chain.probe, !probe.sent { return true }
        guard !chain.frozen, !chain.blocked else { return false }
        if let graftAt = chain.graftAt, graftAt > now { return false }
        let upper = min(chain.peerSeq ?? 0, chain.pending.first.map { $0.seq - 1 } ?? .max)
        return upper > localSeq
    }

    /// Moves an idle chain on: applies buffered ops that now fit, or queues a WANT.
    /// Every applied op reaches every session here, for chains with nothing to do in all but a
    /// few: an unchanged chain is not written back (the nested tables' writes showed in profiles).
    mutating func advance(_ key: ChainKey) {
        guard let chain = chain(key) else { return }
        advance(key, chain)
    }

    /// `advance` for a caller that holds the chain's current state (no lookup). A chain with
    /// nothing buffered, nothing to fetch and no claim to give back is left as it is: that is
    /// every chain but a few, for every applied op and every session.
    mutating func advance(_ key: ChainKey, _ current: Chain) {
        guard current.isIdle else { return }
        if current.pending.isEmpty, current.claim != .held, !needsWant(current) { return }
        var chain = current
        var changed = false
        if chain.frozen, !chain.pending.isEmpty {
            chain.pending = []
            changed = true
        }
        if let localSeq = chain.localSeq, chain.pending.contains(where: { $0.seq <= localSeq }) {
            chain.pending.removeAll { $0.seq <= localSeq }
            changed = true
        }
        if let first = chain.pending.first, chain.localSeq.map({ first.seq == $0 + 1 }) ?? true {
            var run: [Operation] = []
            var expected = first.seq
            while let op = chain.pending.first, op.seq == expected {
                run.append(op)
                chain.pending.removeFirst()
                expected += 1
            }
            chain.applying += 1
            setChain(key, chain)
            emit(.apply(run))
            return
        }
        if needsWant(chain), !chain.queued {
            chain.queued = true
            wantQueue.append(key)
            changed = true
        }
        if changed { setChain(key, chain) }
        releaseIfDone(key, chain)
    }

    /// Gives the chain back to the node once this session has nothing more to fetch of it.
    mutating func releaseIfDone(_ key: ChainKey) {
        guard let chain = chain(key) else { return }
        releaseIfDone(key, chain)
    }

    /// `releaseIfDone` for a caller that holds the chain's current state.
    private mutating func releaseIfDone(_ key: ChainKey, _ chain: Chain) {
        guard chain.claim == .held, chain.isIdle, !chain.queued, !needsWant(chain) else { return }
        var chain = chain
        chain.claim = .none
        setChain(key, chain)
        emit(.releaseChain(key.partition, author: key.author))
    }

    /// Sends queued WANTs while fewer than `maxOutstandingWants` are outstanding.
    mutating func pumpWants() {
        while outstandingWants < configuration.maxOutstandingWants, phase != .closed, let key = wantQueue.popFirst() {
            guard var chain = chain(key) else { continue }
            chain.queued = false
            guard needsWant(chain), let localSeq = chain.localSeq else {
                setChain(key, chain)
                releaseIfDone(key)
                continue
            }
            let isProbe = chain.probe.map { !$0.sent } ?? false
            if !isProbe, chain.claim != .held {
                // Fetching waits for the node's word that no other session fetches this chain.
                if chain.claim == .none {
                    chain.claim = .asked
                    emit(.claimChain(key.partition, author: key.author))
                }
                setChain(key, chain)
                continue
            }
            let want: OutstandingWant
            if var probe = chain.probe, !probe.sent {
                probe.sent = true
                chain.probe = probe
                want = OutstandingWant(from: probe.seq, count: 1, isProbe: true)
            } else {
                let upper = min(chain.peerSeq ?? 0, chain.pending.first.map { $0.seq - 1 } ?? .max)
                let count = Int(min(UInt64(configuration.wantCredit), upper - localSeq))
                want = OutstandingWant(from: localSeq + 1, count: count, isProbe: false)
            }
            if !isProbe { graftIfLazy(key.partition) }
            chain.want = want
            chain.wantSentAt = now
            outstandingWants += 1
            setChain(key, chain)
            send(.want(partition: key.partition, author: key.author, fromSeq: want.from, maxCount: UInt16(want.count)))
        }
    }

    // MARK: - Claims

    /// The node's answer to `.claimChain`: granted, this session fetches the chain now;
    /// refused, it waits for `onChainReleased`.
    public mutating func onChainClaim(_ partition: PartitionID, author: UserID, granted: Bool, now: UInt64) -> [GossipDirective] {
        guard begin(now) else { return [] }
        let key = ChainKey(partition: partition, author: author)
        guard var chain = chain(key), chain.claim == .asked else {
            // Forgotten meanwhile: a grant goes straight back.
            if granted { emit(.releaseChain(partition, author: author)) }
            return finish()
        }
        chain.claim = granted ? .held : .refused
        setChain(key, chain)
        if granted {
            advance(key)
            pumpWants()
        }
        return finish()
    }

    /// The session that fetched a chain this one was refused is done (or its link ended): what
    /// is still missing, this session may fetch now.
    public mutating func onChainReleased(_ partition: PartitionID, author: UserID, now: UInt64) -> [GossipDirective] {
        guard begin(now) else { return [] }
        let key = ChainKey(partition: partition, author: author)
        guard var chain = chain(key), chain.claim == .refused else { return finish() }
        chain.claim = .none
        setChain(key, chain)
        advance(key)
        pumpWants()
        return finish()
    }

    /// Gives up claims held on one WANT unanswered for a whole anti-entropy interval (the WANT
    /// stays outstanding): a peer that stalls cannot keep the node from fetching elsewhere.
    mutating func releaseStaleClaims() {
        for (id, partition) in shared {
            for (author, var chain) in partition.chains where chain.claim == .held && chain.want != nil {
                guard chain.wantSentAt + configuration.antiEntropyInterval <= now else { continue }
                chain.claim = .none
                setChain(ChainKey(partition: id, author: author), chain)
                emit(.releaseChain(id, author: author))
            }
        }
    }

    // MARK: - OPS

    /// A batch answering one of our WANTs: MUST be within the partition offered, the WANT's
    /// credit and its range, in chain order. The shell applies it; the next WANT waits for that.
    mutating func receiveOps(_ batch: OpBatch) {
        let key = ChainKey(partition: batch.partition, author: batch.author)
        guard sentDigests[key.partition] != nil else { return close(.partitionNotOffered(key.partition)) }
        guard var chain = chain(key), var want = chain.want else { return close(.unrequestedOps(key.partition, author: key.author)) }
        guard want.received + batch.ops.count <= want.count else { return close(.creditExceeded(key.partition, author: key.author)) }
        for (index, op) in batch.ops.enumerated() where op.seq != want.from + UInt64(want.received + index) {
            return close(.creditExceeded(key.partition, author: key.author))
        }
        want.received += batch.ops.count
        statistics.opsReceived += batch.ops.count
        if !want.isProbe { fetched += batch.ops.count }
        if let last = batch.ops.last { chain.peerSeq = max(chain.peerSeq ?? 0, last.seq) }
        if !batch.ops.isEmpty {
            chain.applying += 1
            if !want.isProbe { chain.fetchedUnapplied += batch.ops.count }
            emit(.apply(batch.ops))
        }
        if batch.isLast {
            chain.want = nil
            outstandingWants -= 1
            // A short answer: the peer holds nothing more of the range.
            if want.received < want.count, !want.isProbe { chain.peerSeq = want.from + UInt64(want.received) - 1 }
            // A peer that sent an op off our chain but has no op below it to show sent a broken chain.
            if want.isProbe, want.received == 0, chain.probe?.reason == .brokenChain {
                chain.probe = nil
                invalidOps += 1
                if invalidOps > configuration.maxInvalidOps { return close(.tooManyInvalidOps(invalidOps)) }
            }
        } else {
            chain.want = want
        }
        setChain(key, chain)
        advance(key)
        pumpWants()
    }

    // MARK: - Applied

    /// The outcomes of an `.apply` (same order as its ops). Rejected ops count against the peer,
    /// except those that may be accepted later and those of forked authors.
    public mutating func onApplied(_ ops: [Operation], outcomes: [ApplyOutcome], now: UInt64) -> [GossipDirective] {
        guard begin(now) else { return [] }
        guard let first = ops.first, ops.count == outcomes.count else { return finish() }
        let key = ChainKey(partition: first.partition, author: first.author)
        guard var chain = chain(key) else { return finish() }
        chain.applying = max(0, chain.applying - 1)
        chain.fetchedUnapplied = max(0, chain.fetchedUnapplied - ops.count)
        if chain.applyingPush, ops.count == 1 {
            switch outcomes[0] {
            case .applied, .pending: emit(.pushReceived(key.partition, author: key.author, duplicate: false))
            case .duplicate:
                emit(.pushReceived(key.partition, author: key.author, duplicate: true))
                pruneRedundant(key.partition)
            case .forkDetected, .rejected: break
            }
        }
        chain.applyingPush = false
        let probe = chain.probe?.sent == true ? chain.probe : nil
        if probe != nil { chain.probe = nil }
        var proofsMissing = false
        var forkFound = false
        // An op an honest node never sends (it checks each before it leaves): the link closes at once.
        var refusal: GossipError?
        for (op, outcome) in zip(ops, outcomes) {
            switch outcome {
            case .applied:
                chain.localSeq = max(chain.localSeq ?? 0, op.seq)
            case .duplicate:
                chain.localSeq = max(chain.localSeq ?? 0, op.seq)
                if let probe, probe.reason == .brokenChain, probe.seq == op.seq { invalidOps += 1 }
            case .pending(let missingFrom):
                chain.localSeq = missingFrom - 1
                if !chain.blocked, !chain.frozen { insertPending(op, into: &chain) }
            case .forkDetected(let proof):
                chain.frozen = true
                sendFork(proof)
                forkFound = true
            case .rejected(.invalid(.brokenChain)) where op.seq > 1 && probe == nil:
                // The store says so only for the op right above its head, whose prev is not the
                // head: the peer's op at our head's seq is probably another branch (a fork).
                chain.localSeq = op.seq - 1
                chain.probe = Probe(seq: op.seq - 1, reason: .brokenChain)
                chain.blocked = true
            case .rejected(.invalid(.badSignature)):
                refusal = refusal ?? .badSignature(op.partition, author: op.author, seq: op.seq)
                chain.blocked = true
            case .rejected(.invalid(.unprovenErasure)):
                refusal = refusal ?? .unprovenErasure(op.partition, author: op.author, seq: op.seq)
                chain.blocked = true
            case .rejected(.invalid):
                invalidOps += 1
                chain.blocked = true
            case .rejected(.rule(let violation)):
                if !violation.mayResolveLater { invalidOps += 1 }
                chain.blocked = true
            case .rejected(.unknownPartition):
                chain.blocked = true
            case .rejected(.authorForked(let frozenAt)):
                chain.frozen = true
                if !forksKnownByPeer.contains(ForkPoint(key, seq: frozenAt)) { proofsMissing = true }
            }
        }
        if chain.frozen { chain.pending = [] }
        if chain.blocked { chain.pending = [] }
        setChain(key, chain)
        if let refusal {
            close(refusal)
            return finish()
        }
        if invalidOps > configuration.maxInvalidOps {
            close(.tooManyInvalidOps(invalidOps))
            return finish()
        }
        if proofsMissing { emit(.loadForkProofs(key.partition)) }
        advance(key)
        if forkFound { startExchange(key.partition) }
        pumpWants()
        return finish()
    }

    /// This node's store removed a chain's ops from `seq` on without a fork (an op whose
    /// signature did not verify, and what followed it). What the session remembers of the
    /// chain goes back with it, so the ops are fetched again from the peer if it holds them:
    /// a copy that fails again there is refused, as that peer's violation.
    public mutating func onLocalChainCut(_ id: PartitionID, author: UserID, from seq: UInt64, now: UInt64) -> [GossipDirective] {
        guard begin(now) else { return [] }
        let key = ChainKey(partition: id, author: author)
        if var chain = chain(key), (chain.localSeq ?? 0) >= seq {
            chain.localSeq = seq - 1
            chain.pending = []
            chain.blocked = false
            setChain(key, chain)
            advance(key)
            pumpWants()
        }
        return finish()
    }

    /// Keeps an op that arrived ahead of the chain, sorted by seq; beyond the cap the highest
    /// are dropped (a WANT fetches them later).
    func insertPending(_ op: Operation, into chain: inout Chain) {
        guard op.seq > chain.localSeq ?? 0 else { return }
        let index = chain.pending.firstIndex { $0.seq >= op.seq } ?? chain.pending.endIndex
        guard index == chain.pending.endIndex || chain.pending[index].seq != op.seq else { return }
        chain.pending.insert(op, at: index)
        if chain.pending.count > configuration.maxPendingPerChain { chain.pending.removeLast() }
    }

    /// Sends a fork proof unless the peer already has it.
    mutating func sendFork(_ proof: ForkProof) {
        let point = ForkPoint(proof)
        guard !forksKnownByPeer.contains(point) else { return }
        if forksKnownByPeer.count < configuration.maxChains { forksKnownByPeer.insert(point) }
        send(.fork(proof))
    }
}
