import Identity
import Replica
import Wire

/// Live push (EBT-style, docs/DESIGN.md §4.3.3): NEW_OP out when the peer is known to
/// hold exactly the op before; NEW_OP in, with a bounded buffer for ops that arrive early.
extension GossipSession {
    /// An op this node just wrote or accepted (from any link). Pushed as NEW_OP only if the
    /// partition is synced with the peer and the peer is known to hold seq - 1 (or asked for the
    /// chain again with RESUME); a peer known to hold it already, or further behind, is skipped
    /// (anti-entropy fetches what it lacks), and so is a chain the peer asked to SKIP. Pushes
    /// of one author are paced (`pushPacing`): beyond the pace the op is not pushed, and a
    /// vector round lets the peer fetch it with WANTs.
    public mutating func onNewLocalOp(_ op: Operation, now: UInt64) -> [GossipDirective] {
        guard begin(now) else { return [] }
        let key = ChainKey(partition: op.partition, author: op.author)
        // Every applied op reaches every session, so this is the hottest path of live push: the
        // partition is found once (its index serves the reads and the in-place write), no copy
        // of it is made (it would share the chain table, and a write would copy the table), and
        // a chain with nothing to do is not advanced.
        guard let partition = shared.index(forKey: key.partition) else { return finish() }
        var current = shared.values[partition].chains[key.author]
        if var chain = current, (chain.localSeq ?? 0) < op.seq {
            missing -= chain.gap
            chain.localSeq = op.seq
            missing += chain.gap
            shared.values[partition].chains[key.author] = chain  // remembered already: `setChain`'s count holds
            current = chain
        } else if current == nil, shared.values[partition].exchange != nil {
            // A vector round is under way, and the local vector it loaded may predate this op
            // (another session fetched it meanwhile): the chain remembers it, so the round's
            // plan does not fetch it again from this peer.
            var chain = Chain()
            chain.localSeq = op.seq
            setChain(key, chain)
            current = self.chain(key)
        }
        let offered = (localSharing[key.partition] ?? .never) != .never
        if offered, isLazy(key.partition) {
            // Off the partition's tree: announce, unless the peer is known to hold it.
            if (current?.peerSeq ?? 0) < op.seq {
                var chain = current ?? Chain()
                chain.localSeq = max(chain.localSeq ?? 0, op.seq)
                setChain(key, chain)
                current = self.chain(key)
                announce(key, seq: op.seq)
            }
        } else if offered, skippedByPeer.isEmpty || !skippedByPeer.contains(key) {
            var chain = current ?? Chain()
            let baseline = shared.values[partition].baseline
            if Self.wantsPush(op.seq, of: current, baseline: baseline, tree: treePush) {
                // An erased op travels with its proof, in OPS only: a round lets the peer fetch it.
                if op.isErased || op.isExpired {
                    chain.heldBack = true
                    paced(key.partition)
                } else if pushesSent.take(op.author, now: self.now) {
                    send(.newOp(op))
                    chain.peerSeq = op.seq
                    chain.resumed = false
                    chain.heldBack = false
                } else {
                    statistics.pushesPaced += 1
                    chain.heldBack = true
                    paced(key.partition)
                }
                chain.localSeq = max(chain.localSeq ?? 0, op.seq)
                setChain(key, chain)
                current = self.chain(key)
            } else if chain.heldBack {
                // The peer is behind because of pacing, and fetching: a round shows it this op too.
                paced(key.partition)
            }
        }
        if let current { advance(key, current) }
        if !wantQueue.isEmpty { pumpWants() }
        return finish()
    }

    /// Whether the peer should get op `seq` of `chain` (nil: not remembered) pushed: it holds
    /// seq - 1, or it resumed the chain and does not hold seq yet. What it holds comes from the
    /// chain's own entry, else from the partition's baseline, given that this node's head
    /// before `seq` was `seq - 1`.
    ///
    /// On a link of the broadcast tree (`tree`), the peer gets every op it is not known to hold:
    /// what it holds is learned only from what crossed this link, and the tree may have brought
    /// it the ops before by another link; if it lacks them, it keeps the op and fetches the gap.
    static func wantsPush(_ seq: UInt64, of chain: Chain?, baseline: SharedPartition.Baseline, tree: Bool = false) -> Bool {
        let known: UInt64? =
            if let peerSeq = chain?.peerSeq {
                peerSeq
            } else {
                switch baseline {
                case .unknown: nil
                case .sameAsLocal: seq - 1
                case .explicit: 0
                }
            }
        if known == seq - 1 { return true }
        guard chain?.resumed == true || tree else { return false }
        return (known ?? 0) < seq
    }

    /// A push held back by pacing: a vector round (now, or after the one running) shows the
    /// peer what it lacks, and it fetches that with WANTs at its own pace.
    mutating func paced(_ id: PartitionID) {
        if shared[id]?.exchange == nil {
            startExchange(id)
        } else {
            pacedPartitions.insert(id)
        }
    }

    /// A NEW_OP from the peer. It MUST be in a partition offered to the peer, and one author's
    /// NEW_OPs MUST stay within `authorPushRate` (else the link closes). It is applied at once
    /// when the chain is idle; while a WANT or an apply is in flight, or when it is known to be
    /// ahead of the chain, it waits in the chain's buffer (and a WANT fills the gap). Whether it
    /// was new or a duplicate goes to the node (`.pushReceived`), which picks the chain's pusher.
    mutating func receiveNewOp(_ op: Operation) {
        let key = ChainKey(partition: op.partition, author: op.author)
        guard sentDigests[key.partition] != nil else { return close(.partitionNotOffered(key.partition)) }
        guard pushesReceived.take(op.author, now: now) else {
            return close(.pushFlood(author: op.author, rate: configuration.authorPushRate))
        }
        guard isServable(key.partition) else { return }
        statistics.opsReceived += 1
        var chain = self.chain(key) ?? Chain()
        chain.peerSeq = max(chain.peerSeq ?? 0, op.seq)
        if chain.frozen || chain.blocked {
            // A forked author (the proof goes out with the next vector round), or a chain whose
            // ops failed this round: the next round fetches what is valid.
            setChain(key, chain)
            return
        }
        let knownAhead = chain.localSeq.map { op.seq > $0 + 1 } ?? false
        if !chain.isIdle || knownAhead {
            let held = op.seq < chain.nextSeq
            if !held { insertPending(op, into: &chain) }
            setChain(key, chain)
            emit(.pushReceived(key.partition, author: key.author, duplicate: held))
            if held { pruneRedundant(key.partition) }
            advance(key)
            pumpWants()
            return
        }
        chain.applying += 1
        chain.applyingPush = true
        setChain(key, chain)
        emit(.apply([op]))
    }
}
