import Identity
import Replica
import Wire

/// Live push (EBT-style, PROTOCOL-RESEARCH §3.3 step 6): NEW_OP out when the peer is known to
/// hold exactly the op before; NEW_OP in, with a bounded buffer for ops that arrive early.
extension GossipSession {
    /// An op this node just wrote or accepted (from any link). Pushed as NEW_OP only if the
    /// partition is synced with the peer and the peer is known to hold seq - 1; a peer known to
    /// hold it already, or further behind, is skipped (anti-entropy fetches what it lacks).
    public mutating func onNewLocalOp(_ op: Operation, now: UInt64) -> [GossipDirective] {
        guard begin(now) else { return [] }
        let key = ChainKey(partition: op.partition, author: op.author)
        guard shared[key.partition] != nil else { return finish() }
        if var chain = chain(key) {
            chain.localSeq = max(chain.localSeq ?? 0, op.seq)
            setChain(key, chain)
        }
        if isServable(key.partition), peerSeq(key, beforeLocal: op.seq) == op.seq - 1 {
            send(.newOp(op))
            var chain = self.chain(key) ?? Chain()
            chain.peerSeq = op.seq
            chain.localSeq = max(chain.localSeq ?? 0, op.seq)
            setChain(key, chain)
        }
        advance(key)
        pumpWants()
        return finish()
    }

    /// A NEW_OP from the peer. It MUST be in a partition offered to the peer. It is applied at
    /// once when the chain is idle; while a WANT or an apply is in flight, or when it is known to
    /// be ahead of the chain, it waits in the chain's buffer (and a WANT fills the gap).
    mutating func receiveNewOp(_ op: Operation) {
        let key = ChainKey(partition: op.partition, author: op.author)
        guard sentDigests[key.partition] != nil else { return close(.partitionNotOffered(key.partition)) }
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
            if op.seq >= chain.nextSeq { insertPending(op, into: &chain) }
            setChain(key, chain)
            advance(key)
            pumpWants()
            return
        }
        chain.applying += 1
        setChain(key, chain)
        emit(.apply([op]))
    }
}
