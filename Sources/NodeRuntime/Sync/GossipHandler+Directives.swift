import Gossip
import Identity
import LinkProtocol
import Replica
import Store

/// Carrying out a session's directives: one flat switch, one action per directive.
extension GossipHandler {
    /// Does what `directive` names for `peer`'s session. No protocol decisions: loads answer
    /// with exactly what the store holds, applies with the store's outcomes, and the policy of
    /// which partitions to carry is `SyncPolicy`'s.
    func perform(_ directive: GossipDirective, for peer: UserID, node: isolated Node) {
        let store = node.store!
        switch directive {
        case .send(let message):
            // An op erased since the session was told of it goes by WANT/OPS, with its proof.
            if case .newOp(let op) = message { guard let sent = sendable([op], to: peer, node: node)?.first, !sent.isErased, !sent.isExpired else { return } }
            let bytes = message.encode()
            node.send(SyncFrame(type: bytes[0], payload: Array(bytes[1...])), to: peer)

        case .loadVector(let id):
            guard let heads = storeCall(node, peer, "reading heads", { try store.log.heads(id) }) else { return }
            feed(peer, node: node) { session, now in session.onLocalVector(id, heads: heads, now: now) }

        case .loadOps(let id, let author, let fromSeq, let limit):
            guard let loaded = storeCall(node, peer, "reading ops", { try store.log.ops(in: id, author: author, fromSeq: fromSeq, limit: limit) }),
                let ops = sendable(loaded, to: peer, node: node)
            else { return }
            feed(peer, node: node) { session, now in session.onOpsLoaded(id, author: author, ops: ops, now: now) }

        case .loadForkProofs(let id):
            guard let proofs = storeCall(node, peer, "reading fork proofs", { try store.log.forkProofs(id) }) else { return }
            feed(peer, node: node) { session, now in session.onForkProofsLoaded(id, proofs: proofs, now: now) }

        case .refreshSummaries:
            guard let summaries = storeCall(node, peer, "reading the partitions", { try summaries(for: [peer], node: node)[peer] ?? [] })
            else { return }
            feed(peer, node: node) { session, now in session.onLocalSummaries(summaries, now: now) }

        case .apply(let ops):
            apply(ops, from: peer, node: node)

        case .applyForkProof(let proof):
            guard let changed = storeCall(node, peer, "recording a fork proof", { try store.forks.apply(proof) }), changed else { return }
            node.log.warn(
                .fork, "\(node.displayName(of: proof.author)) forked \(proof.partition.text) at seq \(proof.seq) (proof from \(node.displayName(of: peer)))")
            for other in sessions.keys.sorted() where other != peer {
                feed(other, node: node) { session, now in session.onLocalForkProof(proof, now: now) }
            }

        case .learnPartition(let descriptor):
            guard let policy = storeCall(node, peer, "reading conversations", { try self.policy(node: node) }),
                policy.shouldCarry(descriptor, offeredBy: peer),
                storeCall(node, peer, "recording a partition", { try store.log.ensurePartition(descriptor, joined: !policy.isCarrierOnly(descriptor)) }) != nil
            else { return }
            knownPartitions.insert(descriptor.id)
            let role = policy.isCarrierOnly(descriptor) ? "carrying for others" : "now holding"
            node.log.info(.partitionOffered, "\(role) \(descriptor.kind) \(descriptor.id.text.prefix(8)) (offered by \(node.displayName(of: peer)))")
            refreshAllSummaries(node: node, resendChanged: false)

        case .close(let reason):
            if reason.isViolation {
                node.closeLink(to: peer, reason: .protocolViolation, violation: "sync: \(reason)")
            } else {
                node.log.info(.noSync, "\(node.displayName(of: peer)) cannot sync with this node: \(reason)")
                node.closeLink(to: peer, reason: .unsupportedVersion)
            }

        case .progress(let fetched, let wanted):
            noteProgress(fetched: fetched, wanted: wanted, from: peer, node: node)

        case .claimChain(let partition, let author):
            let key = ChainKey(partition: partition, author: author)
            let granted = claims[key] == nil || claims[key] == peer
            if granted {
                claims[key] = peer
            } else {
                refused[key, default: []].insert(peer)
            }
            feed(peer, node: node) { session, now in session.onChainClaim(partition, author: author, granted: granted, now: now) }

        case .releaseChain(let partition, let author):
            release(ChainKey(partition: partition, author: author), by: peer, node: node)

        case .pushReceived(let partition, let author, let duplicate):
            notePush(ChainKey(partition: partition, author: author), from: peer, duplicate: duplicate, node: node)

        case .scheduleTick(let after):
            guard let entry = sessions[peer] else { return }
            let link = entry.link
            entry.timer.arm(after: after, on: node) {
                guard node.isRunning, self.sessions[peer]?.link == link else { return }
                self.feed(peer, node: node) { session, now in session.onTick(now: now) }
            }
        }
    }

    /// `.apply`: one transaction; the outcomes go back to the session, then every accepted op
    /// and every new fork proof to every session (this one included), in order.
    private func apply(_ ops: [Operation], from peer: UserID, node: isolated Node) {
        let store = node.store!
        guard
            let outcomes = storeCall(
                node, peer, "applying \(ops.count) ops", { try store.applyUnlessHeld(ops, nowMillis: node.wallMillis, linkAuthor: peer) })
        else { return }
        feed(peer, node: node) { session, now in session.onApplied(ops, outcomes: outcomes, now: now) }
        let joined = joinInvitedConversations(after: ops, outcomes: outcomes, from: peer, node: node)
        announce(applied: zip(ops, outcomes).lazy.filter { $0.1 == .applied }.map(\.0), partitionsChanged: joined, node: node)
        for (op, outcome) in zip(ops, outcomes) {
            switch outcome {
            case .applied:
                feedAll(node: node) { _, session, now in session.onNewLocalOp(op, now: now) }
            case .forkDetected(let proof):
                node.log.warn(.fork, "\(node.displayName(of: proof.author)) forked \(proof.partition.text) at seq \(proof.seq)")
                feedAll(node: node) { _, session, now in session.onLocalForkProof(proof, now: now) }
            case .rejected(.rule(.stampedAhead)):
                node.noteStampAhead(of: op.author, op.hlc)
                node.log.warn(
                    .clock,
                    "op \(op.seq) of \(node.displayName(of: op.author)) in \(op.partition.text) is stamped "
                        + "\(DoctorReport.Clock.span(Int64(clamping: op.hlc.wallMillis) - Int64(clamping: node.wallMillis))) ahead of this node's clock; "
                        + "held until then")
            case .duplicate, .pending, .rejected:
                break
            }
        }
    }

    /// The leading ops of `ops` that may leave for `peer`: each has a signature this node
    /// verified (`OutboundChecks.sendable`). One that fails is not sent, nor what follows it; the
    /// store has dropped them, so the views changed. Nil when the store failed (the link is
    /// closing).
    private func sendable(_ ops: [Operation], to peer: UserID, node: isolated Node) -> [Operation]? {
        let outbound = node.store!.outbound
        guard let (sendable, discarded) = storeCall(node, peer, "checking ops before sending them", { try outbound.sendable(ops, nowMillis: node.wallMillis) })
        else { return nil }
        if let discarded {
            node.log.warn(
                .violation,
                "op \(discarded.seq) of \(node.displayName(of: discarded.author)) in \(discarded.partition.text) has a signature that does not verify; "
                    + "removed it and what followed it, to be fetched again")
            node.emit(.changed([discarded.partition]))
            // The sessions still think those ops are here: each is told the chain went back, and
            // the changed partition is re-announced, so good ones are fetched from whoever has them.
            feedAll(node: node) { _, session, now in
                session.onLocalChainCut(discarded.partition, author: discarded.author, from: discarded.seq, now: now)
            }
            refreshAllSummaries(node: node, resendChanged: true)
        }
        return sendable
    }

    /// An invite that arrived in this node's inbox makes it a member: it joins the conversation
    /// and starts offering it to peers, so its ops follow. Returns whether it joined any.
    private func joinInvitedConversations(after ops: [Operation], outcomes: [ApplyOutcome], from peer: UserID, node: isolated Node) -> Bool {
        let inbox = inboxID ?? PartitionDescriptor.inbox(owner: node.identity.id).id
        inboxID = inbox
        guard zip(ops, outcomes).contains(where: { $0.partition == inbox && $1 == .applied }) else { return false }
        let store = node.store!
        guard let joined = storeCall(node, peer, "reading the inbox", { try store.processInbox(me: node.identity) }), !joined.isEmpty else {
            return false
        }
        for descriptor in joined {
            knownPartitions.insert(descriptor.id)
            node.log.info(.invited, "invited to conversation \(descriptor.id.text.prefix(8)) (via \(node.displayName(of: peer)))")
        }
        refreshAllSummaries(node: node, resendChanged: false)
        return true
    }
}
