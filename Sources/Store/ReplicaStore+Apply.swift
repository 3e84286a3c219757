import Identity
import Replica
import SQLite
import Sodium
import Wire

/// Errors of the store that callers show to people.
public enum StoreError: Error, Equatable, CustomStringConvertible {
    /// A local op would break a rule; nothing was written.
    case rejected(RejectReason)
    /// Input that cannot become an op (empty text, a field over its limit...).
    case invalidInput(String)
    /// The partition is not known to this store.
    case unknownPartition(PartitionID)
    /// No message, task or op with this id.
    case notFound(String)
    /// The author is not a current member of the conversation, so it may not write there.
    case notMember(PartitionID)
    /// The database holds something this build cannot read.
    case damaged(String)

    public var description: String {
        switch self {
        case .rejected(let reason): reason.description
        case .invalidInput(let why): why
        case .unknownPartition(let id): "unknown partition \(id.text)"
        case .notFound(let what): what
        case .notMember(let id): "not a member of conversation \(id.text)"
        case .damaged(let why): "the database is damaged: \(why)"
        }
    }
}

extension ReplicaStore {
    // MARK: Applying ops

    /// Applies one op from anywhere (a peer, an import file), checking everything, in one
    /// transaction with its head and view changes; one stamped too far ahead of `nowMillis`
    /// waits (`HybridClock.isAhead`). Nothing is stored unless the outcome is
    /// `.applied` (or `.forkDetected`, which stores the proof).
    public func apply(_ op: Operation, nowMillis: UInt64) throws -> ApplyOutcome {
        try database.transaction(.immediate) {
            if HybridClock.isAhead(op.hlc, of: nowMillis) { return .rejected(.rule(.stampedAhead)) }
            let outcome = try applyChecked(op, signature: .none, nowMillis: nowMillis)
            try views.flushPendingRebuilds()
            return outcome
        }
    }

    /// Applies a batch in one transaction. Each contiguous run of one author's new ops in one
    /// partition costs a single signature check (chain-batched verification); ops that fail are
    /// retried one by one so each gets its own outcome. `linkAuthor`: the peer whose link
    /// delivered the batch; an op it pushed alone as its own author may be stored before its
    /// signature is checked (`maxLinkAuthenticatedTail`). `signaturesChecked`: the caller
    /// verified every op's own signature (`Operation.signaturesAreValid`), as an import does.
    public func apply(_ ops: [Operation], nowMillis: UInt64, linkAuthor: UserID? = nil, signaturesChecked: Bool = false) throws -> [ApplyOutcome] {
        try database.transaction(.immediate) {
            var outcomes: [ApplyOutcome] = []
            outcomes.reserveCapacity(ops.count)
            var start = 0
            while start < ops.count {
                // An op stamped too far ahead waits (its chain's later ops are then pending).
                if HybridClock.isAhead(ops[start].hlc, of: nowMillis) {
                    outcomes.append(.rejected(.rule(.stampedAhead)))
                    start += 1
                    continue
                }
                var end = start + 1
                while end < ops.count, ops[end].partition == ops[start].partition, ops[end].author == ops[start].author,
                    ops[end].seq == ops[end - 1].seq + 1, !HybridClock.isAhead(ops[end].hlc, of: nowMillis)
                { end += 1 }
                outcomes += try applyRun(ops[start..<end], nowMillis: nowMillis, linkAuthor: linkAuthor, signaturesChecked: signaturesChecked)
                start = end
            }
            try views.flushPendingRebuilds()
            return outcomes
        }
    }

    private func applyRun(
        _ run: ArraySlice<Operation>, nowMillis: UInt64, linkAuthor: UserID?, signaturesChecked: Bool
    ) throws -> [ApplyOutcome] {
        let alone: SignatureEvidence = signaturesChecked ? .checked : .none
        guard run.count > 1, let record = try log.partition(run.first!.partition) else {
            return try run.map { try applyChecked($0, signature: alone, nowMillis: nowMillis, linkAuthor: linkAuthor) }
        }
        let head = try log.existingAuthorID(run.first!.author).map { try log.head(pid: record.pid, aid: $0) } ?? .none
        // Only the part of the run that extends the head can be chain-verified as a whole.
        guard let firstNew = run.firstIndex(where: { $0.seq == head.maxSeq + 1 }) else {
            return try run.map { try applyChecked($0, signature: alone, nowMillis: nowMillis) }
        }
        var outcomes = try run[run.startIndex..<firstNew].map { try applyChecked($0, signature: alone, nowMillis: nowMillis) }
        let newOps = run[firstNew...]
        // The ops below the head may have revealed a fork (a second branch), which freezes the
        // author: then each new op takes the full path, reading the head afresh.
        if firstNew > run.startIndex, try log.existingAuthorID(run.first!.author).map({ try log.head(pid: record.pid, aid: $0) })?.frozenAt != head.frozenAt {
            return outcomes + (try newOps.map { try applyChecked($0, signature: alone, nowMillis: nowMillis) })
        }
        let chainValid: Bool
        do { try verifyChain(newOps, after: head.headID); chainValid = true } catch { chainValid = false }
        // The posts of an authentic run count as held when an op of it that arrived without its
        // body is checked against a keep-the-last-N retention; if one is still inside the window
        // here, they are remembered for the other chains' turn (`Views.seenPosts`).
        let hasExpired = newOps.contains(where: \.isExpired)
        batchPosts = chainValid && hasExpired ? newOps.filter { $0.type == OperationType.post.rawValue }.map(ClockKey.init) : []
        defer { batchPosts = [] }
        // The run's head is followed here rather than read and written per op: one head write
        // for the whole run (the ops of a run are one author's, in one partition, in seq order).
        var current = head
        var lastApplied: Operation?
        for op in newOps {
            // The last op's own signature was checked; it authenticates the others through the chain.
            let evidence: SignatureEvidence = signaturesChecked || (chainValid && op.seq == newOps.last!.seq) ? .checked : chainValid ? .chain : .none
            let outcome = try applyChecked(op, signature: evidence, nowMillis: nowMillis, knownHead: current, writesHead: false)
            if outcome == .applied {
                current = ChainHead(maxSeq: op.seq, headID: op.id, frozenAt: current.frozenAt, uncheckedFrom: nil)
                lastApplied = op
            }
            outcomes.append(outcome)
        }
        if !batchPosts.isEmpty, outcomes.contains(.rejected(.rule(.insideRetention))) { views.rememberPosts(batchPosts, pid: record.pid) }
        // Each applied op of the run had its signature checked, alone or as the chain's last.
        if let lastApplied, let aid = try log.existingAuthorID(lastApplied.author) {
            try log.writeHead(of: lastApplied, pid: record.pid, aid: aid, uncheckedFrom: nil)
        }
        return outcomes
    }

    /// The validation order of docs/DESIGN.md §3.3, cheapest first (partition, body hash, rules that need
    /// only the op, chain position, signature, rules that need other ops, the carrier quota),
    /// then the write. Every check reads only what every replica can read — the envelope and
    /// plaintext bodies — so members and carriers accept exactly the same ops.
    /// Must run inside a transaction. `knownHead`: the author's head in the partition when the
    /// caller follows it (a chain run); `writesHead: false` leaves writing the head to the
    /// caller, which must do it before the transaction ends.
    func applyChecked(
        _ op: Operation, signature: SignatureEvidence, nowMillis: UInt64, linkAuthor: UserID? = nil, knownHead: ChainHead? = nil,
        writesHead: Bool = true
    ) throws -> ApplyOutcome {
        guard let record = try log.partition(op.partition) else { return .rejected(.unknownPartition) }
        // The body hash comes before decoding the body: a changed body is reported as such.
        guard op.hasValidBodyHash else { return .rejected(.invalid(.bodyHashMismatch)) }
        let checked: CheckedBody
        if op.isExpired {
            // An op without its body outside its room's retention: taken only if this replica
            // sees it outside too (docs/ARCHITECTURE.md, *Retention*), whoever sent it.
            guard record.descriptor.kind == .room, Views.expiringTypes.contains(Int64(op.type)) else {
                return .rejected(.rule(.invalidBody("only a room's posts, edits and reactions arrive without their body")))
            }
            guard try views.isOutsideRetention(op, pid: record.pid, nowMillis: nowMillis, batchPosts: batchPosts) else {
                return .rejected(.rule(.insideRetention))
            }
            checked = .expired
        } else if let erasure = op.erasure {
            // An erased op stands on its proof instead of its body: checked in full, whoever sent it.
            guard record.descriptor.kind == .room else { return .rejected(.invalid(.unprovenErasure("only a room's ops are erased"))) }
            if let problem = op.erasureProblem() { return .rejected(.invalid(.unprovenErasure(problem))) }
            checked = .erased(erasure)
        } else {
            switch PartitionRules.check(op, in: record.descriptor) {
            case .success(let body): checked = body
            case .failure(let violation): return .rejected(.rule(violation))
            }
        }
        let existingAID = try log.existingAuthorID(op.author)
        let head = try knownHead ?? existingAID.map { try log.head(pid: record.pid, aid: $0) } ?? .none
        if let frozenAt = head.frozenAt, op.seq >= frozenAt { return .rejected(.authorForked(at: frozenAt)) }
        if op.seq <= head.maxSeq, let aid = existingAID {
            guard let stored = try log.storedOp(pid: record.pid, aid: aid, seq: op.seq) else {
                throw StoreError.damaged("missing op \(op.seq) below head \(head.maxSeq)")
            }
            if stored.id == op.id { return .duplicate }
            guard signature == .checked || op.hasValidSignature else { return .rejected(.invalid(.badSignature)) }
            // A stored op held on another op's word, with a bad signature of its own, is no
            // branch of a fork: it goes, with the chain after it, and this op takes its place.
            if knownHead == nil, try outbound.discardIfUnverifiable(stored, seq: op.seq, record: record, aid: aid, nowMillis: nowMillis) {
                return try applyChecked(op, signature: .checked, nowMillis: nowMillis)
            }
            let proof = try ForkProof(stored.header, op.header)
            try forks.recordFork(proof, record: record, aid: aid)
            return .forkDetected(proof)
        }
        if op.seq > head.maxSeq + 1 { return .pending(missingFrom: head.maxSeq + 1) }
        guard op.prev == head.headID else { return .rejected(.invalid(.brokenChain)) }
        // A position whose op was refused for its signature takes no op on another's word again.
        let refused = try existingAID.map { try log.isRefusedSignature(ChainPosition(pid: record.pid, aid: $0, seq: op.seq)) } ?? false
        let deferred = signature == .none && !refused && Self.mayDeferSignature(of: op, linkAuthor: linkAuthor, head: head)
        var signatureChecked = signature == .checked
        if !signatureChecked, !deferred, signature == .none || refused {
            guard op.hasValidSignature else { return .rejected(.invalid(.badSignature)) }
            signatureChecked = true
        }
        if let violation = try crossAuthorViolation(op, checked: checked, record: record, aid: existingAID) { return .rejected(.rule(violation)) }
        if try carrier.exceedsCarrierQuota(op, record: record) { return .rejected(.rule(.quotaExceeded)) }

        let aid = try existingAID ?? log.authorID(op.author)
        let oid = try log.insert(op, pid: record.pid, aid: aid, signatureChecked: signatureChecked, nowMillis: nowMillis)
        if refused { try log.forgetRefusedSignature(ChainPosition(pid: record.pid, aid: aid, seq: op.seq)) }
        if writesHead { try log.writeHead(of: op, pid: record.pid, aid: aid, uncheckedFrom: Self.uncheckedFrom(after: op, deferred: deferred, head: head)) }
        carrier.noteStored(op, pid: record.pid)
        try views.applyViews(op, checked: checked, oid: oid, record: record, aid: aid, rebuilding: false)
        if record.descriptor.kind == .room { try views.noteRoomWrite(pid: record.pid, nowMillis: nowMillis) }
        if case .plain(.delete(let target, let targetSeq, let erasing)) = checked {
            try log.erase(deletedBy: op, target: target, targetSeq: targetSeq, erasing: erasing, pid: record.pid, aid: aid, signatureChecked: signatureChecked)
        }
        if case .plain(.deviceRevocation) = checked { try cutRevokedChains() }
        clock.observe(op.hlc, nowMillis: nowMillis)
        return .applied
    }

    /// Rules that look at other ops: conversation membership (ever a member: plaintext, so
    /// carriers decide alike), and that a plaintext edit or delete targets the author's own
    /// earlier post (its chain is complete below this op, so the answer is the same on every
    /// replica). An encrypted edit or delete is checked by members at view time instead.
    private func crossAuthorViolation(_ op: Operation, checked: CheckedBody, record: PartitionRecord, aid: Int64?) throws -> RuleViolation? {
        if let aid, try devices.refuses(op, aid: aid) { return .deviceRevoked }
        if let violation = try deviceViolation(op, checked: checked, record: record, aid: aid) { return violation }
        if case .conversation(let creator, _) = record.descriptor {
            let isCreation = op.author == creator && op.seq == 1
            if !isCreation, try !keys.isEverMember(devices.person(of: op.author), pid: record.pid) { return .notMember }
            if case .plain(.memberRemove) = checked, try devices.person(of: op.author) != devices.person(of: creator) { return .creatorOnly }
        }
        let body: OperationBody
        switch checked {
        case .plain(let plain): body = plain
        case .erased(let erasure):
            // An erased edit: the post its proof deletes must be the author's own, as for the
            // delete itself (an erased post is that post; `erasureProblem` checked its id).
            guard op.type == OperationType.edit.rawValue,
                case .delete(let target, let targetSeq, _)? = try? OperationBody(type: erasure.proof.type, decoding: erasure.proof.body)
            else { return nil }
            return try log.isOwnPost(target, seq: targetSeq, before: op.seq, author: op.author, pid: record.pid) ? nil : .notAuthorOfTarget
        default: return nil
        }
        switch body {
        case .edit(let target, let targetSeq, _), .delete(let target, let targetSeq, _):
            guard try log.isOwnPost(target, seq: targetSeq, before: op.seq, author: op.author, pid: record.pid) else { return .notAuthorOfTarget }
            if case .delete(_, _, let erasing) = body, try !log.namesOwnEdits(erasing, of: target, before: op.seq, author: op.author, pid: record.pid) {
                return .notAuthorOfTarget
            }
        default:
            break
        }
        return nil
    }
}
