import Identity
import Replica
import Wire

/// Received messages: SUMMARY, VECTOR, FORK here; WANT and OPS in `+Serve` and `+Fetch`;
/// NEW_OP in `+Push`; SKIP and RESUME in `+PushControl`; PRUNE, GRAFT and ANNOUNCE in `+Tree`.
extension GossipSession {
    /// A frame received on the link: decodes it and handles the message. A reserved type (a
    /// later feature) is ignored; any other decoding error closes the link.
    public mutating func onFrame(_ bytes: [UInt8], now: UInt64) -> [GossipDirective] {
        guard begin(now) else { return [] }
        do {
            handle(try SyncMessage.decode(bytes))
        } catch .reservedType {
            // Presence, typing, blobs: not this session's business.
        } catch {
            close(.malformedMessage(error))
        }
        return finish()
    }

    /// A message received on the link (already decoded).
    public mutating func onMessage(_ message: SyncMessage, now: UInt64) -> [GossipDirective] {
        guard begin(now) else { return [] }
        handle(message)
        return finish()
    }

    mutating func handle(_ message: SyncMessage) {
        switch message {
        case .summary(_, let entries): receiveSummary(entries)
        case .vector(let partition, let more, let heads): receiveVector(partition, more: more, heads: heads)
        case .want(let partition, let author, let from, let count):
            receiveWant(PeerWant(key: ChainKey(partition: partition, author: author), from: from, count: Int(count)))
        case .ops(let batch): receiveOps(batch)
        case .newOp(let op): receiveNewOp(op)
        case .fork(let proof): receiveFork(proof)
        case .skip(let chains): receiveSkip(chains)
        case .resume(let chains): receiveResume(chains)
        case .prune(let partitions): receivePrune(partitions)
        case .graft(let partitions): receiveGraft(partitions)
        case .announce(let partition, let heads): receiveAnnounce(partition, heads: heads)
        case .compactVector, .compactAnnounce, .compactSkip, .compactResume:
            if let expanded = expanded(message) { handle(expanded) }
        }
    }

    // MARK: - SUMMARY

    /// Entries are news, not a full list: each one adds or updates a partition the peer holds.
    mutating func receiveSummary(_ entries: [SummaryEntry]) {
        for entry in entries {
            let id = entry.partition
            guard peerListed[id] != nil || peerListed.count < configuration.maxPeerPartitions else { continue }
            peerListed[id] = entry.digest
            guard let summary = local[id] else {
                if let descriptor = entry.descriptor, learnRequested.count < configuration.maxPeerPartitions,
                    learnRequested.insert(id).inserted
                {
                    emit(.learnPartition(descriptor))
                }
                continue
            }
            guard summary.sharing != .never, sentDigests[id] != nil else { continue }
            linkIfBothList(id)
            if entry.digest != summary.digest.raw { startExchange(id) }
        }
    }

    // MARK: - VECTOR

    /// Starts a vector round: loads this node's vector (sent when it arrives).
    mutating func startExchange(_ id: PartitionID) {
        guard var partition = shared[id], partition.exchange == nil else { return }
        partition.exchange = VectorExchange(startedAt: now)
        shared[id] = partition
        emit(.loadVector(id))
    }

    /// A page of the peer's vector. A vector for a partition not synced on this link is ignored.
    mutating func receiveVector(_ id: PartitionID, more: Bool, heads: [Head]) {
        guard shared[id] != nil else { return }
        startExchange(id)
        guard var partition = shared[id], var exchange = partition.exchange else { return }
        if exchange.remoteComplete {
            // The peer started another round before ours ended: take its new vector.
            bufferedRemoteHeads -= exchange.remote.count
            (exchange.remote, exchange.remoteComplete) = ([:], false)
        }
        for head in heads where exchange.remote[head.author] != nil || bufferedRemoteHeads < configuration.maxChains {
            if exchange.remote.updateValue(head, forKey: head.author) == nil { bufferedRemoteHeads += 1 }
        }
        exchange.remoteComplete = !more
        partition.exchange = exchange
        shared[id] = partition
        if exchange.remoteComplete, exchange.local != nil { plan(id) }
    }

    /// This node's vector of a partition (the answer to `.loadVector`): sent to the peer, then
    /// compared with the peer's once both are complete.
    public mutating func onLocalVector(_ id: PartitionID, heads: [Head], now: UInt64) -> [GossipDirective] {
        guard begin(now) else { return [] }
        guard var partition = shared[id], var exchange = partition.exchange, exchange.local == nil else { return finish() }
        exchange.local = heads
        partition.exchange = exchange
        shared[id] = partition
        let perPage = min(SyncMessage.maxVectorHeads, (peerMaxFrame - SyncMessage.vectorPrefixBytes) / SyncMessage.headBytes)
        var start = 0
        repeat {
            let end = min(start + perPage, heads.count)
            send(.vector(partition: id, more: end < heads.count, heads: Array(heads[start..<end])))
            start = end
        } while start < heads.count
        if exchange.remoteComplete { plan(id) }
        return finish()
    }

    // MARK: - FORK

    /// A proof from the peer: applied by the shell if this node holds the partition; the author
    /// is not fetched from again.
    mutating func receiveFork(_ proof: ForkProof) {
        let key = ChainKey(partition: proof.partition, author: proof.author)
        guard local[proof.partition] != nil, !forksKnownByPeer.contains(ForkPoint(proof)) else { return }
        if forksKnownByPeer.count < configuration.maxChains { forksKnownByPeer.insert(ForkPoint(proof)) }
        emit(.applyForkProof(proof))
        freeze(key)
        // A new round (after the shell applied the proof) shows whether the branches differ lower down.
        startExchange(proof.partition)
    }

    /// Stops fetching a forked author's chain (ops already asked for may still arrive).
    mutating func freeze(_ key: ChainKey) {
        guard shared[key.partition] != nil else { return }
        var chain = self.chain(key) ?? Chain()
        chain.frozen = true
        chain.pending = []
        setChain(key, chain)
    }
}
