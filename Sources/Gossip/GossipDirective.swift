import Identity
import Replica

/// What a `GossipSession` asks its shell to do. The shell carries them out in order, with no
/// protocol decisions of its own, and answers each load or apply with its matching event.
public enum GossipDirective: Hashable, Sendable {
    /// Encode the message and send it on this link.
    case send(SyncMessage)
    /// Read the partition's heads (`OpLog.heads`) and pass them to `onLocalVector`.
    case loadVector(PartitionID)
    /// Read at most `limit` of one author's ops from `fromSeq` on (`OpLog.ops(in:author:fromSeq:limit:)`)
    /// and pass them to `onOpsLoaded`.
    case loadOps(PartitionID, author: UserID, fromSeq: UInt64, limit: Int)
    /// Read the partition's fork proofs (`OpLog.forkProofs`) and pass them to `onForkProofsLoaded`.
    case loadForkProofs(PartitionID)
    /// Compute the current summaries for this peer (as for `start`) and pass them to `onLocalSummaries`.
    case refreshSummaries
    /// Apply these ops, received from the peer, in one transaction (`ReplicaStore.apply(_:nowMillis:)`),
    /// then pass the outcomes to `onApplied`. They are one author's ops in one partition, in chain order.
    case apply([Operation])
    /// Apply a fork proof received from the peer (`Forks.apply(_ proof:)`); if it changed
    /// anything, pass it to `onLocalForkProof` of the node's other sessions.
    case applyForkProof(ForkProof)
    /// The peer offers a partition this node does not hold: decide with `SyncPolicy.shouldCarry`
    /// whether to carry it; if so, record it and call `onLocalSummaries` of every session.
    case learnPartition(PartitionDescriptor)
    /// End the link (the link layer says BYE): the peer broke the protocol, or cannot speak it.
    /// Count a violation towards a ban when `reason.isViolation`. The session ignores every
    /// later event.
    case close(reason: GossipError)
    /// Ops fetched from this peer so far, and that number plus the ops known to be missing
    /// (equal when nothing is left to fetch): for `parley status` and logs.
    case progress(fetched: Int, wanted: Int)
    /// This session would fetch the chain: answer with `onChainClaim(granted:)` — granted unless
    /// another session of the node holds the chain (then call this one's `onChainReleased` when
    /// that session releases it or its link ends).
    case claimChain(PartitionID, author: UserID)
    /// This session is done fetching the chain (it holds no claim on it any more).
    case releaseChain(PartitionID, author: UserID)
    /// A NEW_OP of this chain arrived from the peer, new to this node or a `duplicate`. The node
    /// keeps one pusher per chain, the link that delivers it: the chain's author when linked,
    /// else the first link to deliver it. For a duplicate from a link that is not the pusher,
    /// call this session's `onRedundantPush` (it asks the peer to SKIP the chain); when the
    /// pusher's link ends, call `onPushersLost` of every other session with its chains.
    case pushReceived(PartitionID, author: UserID, duplicate: Bool)
    /// Call `onTick` after this many milliseconds (replacing any earlier request).
    case scheduleTick(after: UInt64)
}

/// Why a session ended its link. Each case but `incompatiblePeer` is a protocol violation
/// (`isViolation`): the node MAY ban the peer for a while after repeated ones
/// (docs/DESIGN.md §4.2.4).
public enum GossipError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A frame that does not decode.
    case malformedMessage(SyncDecodingError)
    /// The peer speaks no protocol version this build does, or accepts frames too small for one op.
    case incompatiblePeer(String)
    /// A WANT, OPS or NEW_OP for a partition this node never offered the peer (a non-member
    /// asking for a private partition, or a peer writing where it was not invited).
    case partitionNotOffered(PartitionID)
    /// OPS for a chain with no WANT outstanding.
    case unrequestedOps(PartitionID, author: UserID)
    /// More ops than the WANT's credit, or ops outside the asked range.
    case creditExceeded(PartitionID, author: UserID)
    /// More WANTs waiting than the session serves at once.
    case tooManyWants
    /// More ops from this peer failed validation (chains, rules) than allowed.
    case tooManyInvalidOps(Int)
    /// The peer sent an op whose signature does not verify. An honest node verifies every op's
    /// signature before it sends it (`OutboundChecks.sendable`), so one bad signature is the
    /// sender's doing.
    case badSignature(PartitionID, author: UserID, seq: UInt64)
    /// The peer sent an erased op whose proof does not show that its author deleted it. An
    /// honest node holds only proofs it checked, so this is the sender's doing (a relay trying
    /// to make a message vanish).
    case unprovenErasure(PartitionID, author: UserID, seq: UInt64)
    /// The peer pushed one author's ops faster than `GossipConfiguration.authorPushRate`
    /// allows (an honest node paces its pushes below it and leaves the rest to WANTs).
    case pushFlood(author: UserID, rate: OpRate)

    public var description: String {
        switch self {
        case .malformedMessage(let error): "malformed message: \(error)"
        case .incompatiblePeer(let why): "incompatible peer: \(why)"
        case .partitionNotOffered(let id): "the peer used partition \(id.text), which was not offered to it"
        case .unrequestedOps(let id, let author): "ops of \(author.short) in \(id.text) that were never asked for"
        case .creditExceeded(let id, let author): "more ops of \(author.short) in \(id.text) than asked for"
        case .tooManyWants: "too many WANTs outstanding"
        case .tooManyInvalidOps(let count): "\(count) invalid ops"
        case .badSignature(let id, let author, let seq): "op \(seq) of \(author.short) in \(id.text) has a signature that does not verify"
        case .unprovenErasure(let id, let author, let seq):
            "op \(seq) of \(author.short) in \(id.text) came without its body, and no delete of its author's proves it erased"
        case .pushFlood(let author, let rate):
            "push flood: more than \(rate.perSecond) ops a second (burst \(rate.burst)) by \(author.short)"
        }
    }

    /// Whether the peer misbehaved (as opposed to speaking a protocol this build cannot).
    public var isViolation: Bool {
        if case .incompatiblePeer = self { return false }
        return true
    }
}
