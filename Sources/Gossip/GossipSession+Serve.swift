import Identity
import Replica
import Wire

/// Serving the peer: WANTs answered with OPS read from the store, one WANT at a time, in
/// `loadBatch` steps, each batch within the peer's frame; fork proofs it lacks.
extension GossipSession {
    /// Whether the partition is synced on this link now (both list it, and this node still
    /// shares it with the peer).
    func isServable(_ id: PartitionID) -> Bool {
        shared[id] != nil && (localSharing[id] ?? .never) != .never
    }

    // MARK: - WANT

    /// A WANT from the peer. It MUST name a partition offered to the peer (else the link closes:
    /// a non-member never reads a private partition); one offered once but no longer shared is
    /// answered with an empty last batch.
    mutating func receiveWant(_ want: PeerWant) {
        guard sentDigests[want.key.partition] != nil else { return close(.partitionNotOffered(want.key.partition)) }
        guard peerWants.count < configuration.maxQueuedPeerWants else { return close(.tooManyWants) }
        if shared[want.key.partition] != nil {
            // The peer holds everything below what it asks for.
            var chain = self.chain(want.key) ?? Chain()
            chain.peerSeq = max(chain.peerSeq ?? 0, want.from - 1)
            setChain(want.key, chain)
        }
        peerWants.append(want)
        serveNext()
    }

    /// Starts serving the next queued WANT if none is being served.
    mutating func serveNext() {
        while serving == nil, phase != .closed, let want = peerWants.popFirst() {
            guard isServable(want.key.partition) else {
                send(.ops(OpBatch(partition: want.key.partition, author: want.key.author, ops: [], isLast: true)))
                continue
            }
            let limit = min(configuration.loadBatch, want.count)
            serving = Serving(want: want, nextSeq: want.from, remaining: want.count, requested: limit)
            emit(.loadOps(want.key.partition, author: want.key.author, fromSeq: want.from, limit: limit))
        }
    }

    /// Ops read from the store (the answer to `.loadOps`): sent as OPS batches; fewer than asked
    /// means the chain ends there, and the answer to the WANT is complete.
    public mutating func onOpsLoaded(_ id: PartitionID, author: UserID, ops: [Operation], now: UInt64) -> [GossipDirective] {
        guard begin(now) else { return [] }
        let key = ChainKey(partition: id, author: author)
        guard var serving, serving.want.key == key else { return finish() }
        // Only the contiguous run asked for is sent, whatever the shell handed over.
        var run: [Operation] = []
        if isServable(id) {
            for op in ops.prefix(serving.requested) {
                guard op.partition == id, op.author == author, op.seq == serving.nextSeq + UInt64(run.count) else { break }
                run.append(op)
            }
        }
        serving.remaining -= run.count
        serving.nextSeq += UInt64(run.count)
        let done = run.count < serving.requested || serving.remaining == 0
        sendBatches(run, of: key, endingTheAnswer: done)
        if let last = run.last, shared[id] != nil {
            var chain = self.chain(key) ?? Chain()
            chain.peerSeq = max(chain.peerSeq ?? 0, last.seq)
            setChain(key, chain)
        }
        if done {
            self.serving = nil
            serveNext()
        } else {
            serving.requested = min(configuration.loadBatch, serving.remaining)
            self.serving = serving
            emit(.loadOps(id, author: author, fromSeq: serving.nextSeq, limit: serving.requested))
        }
        return finish()
    }

    /// Splits ops into OPS messages of at most 256 ops within the peer's frame.
    mutating func sendBatches(_ ops: [Operation], of key: ChainKey, endingTheAnswer isLast: Bool) {
        var batch = OpBatch(partition: key.partition, author: key.author, ops: [], isLast: false)
        var size = SyncMessage.opsPrefixBytes
        for op in ops {
            let opSize = SyncMessage.opLengthBytes + op.carriedByteCount
            if batch.ops.count == SyncMessage.maxOpsPerBatch || size + opSize > peerMaxFrame {
                send(.ops(batch))
                (batch.ops, size) = ([], SyncMessage.opsPrefixBytes)
            }
            batch.ops.append(op)
            size += opSize
        }
        guard !batch.ops.isEmpty || isLast else { return }
        batch.isLast = isLast
        send(.ops(batch))
    }

    // MARK: - Fork proofs

    /// A partition's fork proofs (the answer to `.loadForkProofs`): those the peer lacks are sent.
    public mutating func onForkProofsLoaded(_ id: PartitionID, proofs: [ForkProof], now: UInt64) -> [GossipDirective] {
        guard begin(now) else { return [] }
        if isServable(id) {
            for proof in proofs where proof.partition == id { sendFork(proof) }
        }
        return finish()
    }

    /// A fork proof this node just recorded (found by its store or received on another link):
    /// gossiped to the peer if the partition is synced with it, and the author is not fetched again.
    public mutating func onLocalForkProof(_ proof: ForkProof, now: UInt64) -> [GossipDirective] {
        guard begin(now) else { return [] }
        if isServable(proof.partition) {
            sendFork(proof)
            freeze(ChainKey(partition: proof.partition, author: proof.author))
        }
        return finish()
    }
}
