/// What happened when a replica was handed an op. Callers switch over every case.
public enum ApplyOutcome: Hashable, Sendable {
    /// Stored, with its head and view changes, in one transaction.
    case applied
    /// Already held; nothing changed.
    case duplicate
    /// The author's earlier ops are missing: deliver from `missingFrom` first.
    case pending(missingFrom: UInt64)
    /// The op conflicts with one already held at the same seq: the proof is stored and the
    /// author's ops in this partition are excluded from the fork point on.
    case forkDetected(ForkProof)
    /// Refused; nothing was stored.
    case rejected(RejectReason)
}

/// Why a replica refused an op.
public enum RejectReason: Hashable, Sendable, CustomStringConvertible {
    /// The envelope failed a check: layout, body hash, signature or chain link.
    case invalid(OperationError)
    /// The op breaks its partition's rules.
    case rule(RuleViolation)
    /// The replica does not hold the partition (it must learn its descriptor first).
    case unknownPartition
    /// A fork proof excludes this author's ops from `seq` on.
    case authorForked(at: UInt64)

    /// The kind of reason without its details (which seq, which field), for counting refusals
    /// by reason (`parley import`): "bad signature", "broken chain", "the author is not a member
    /// of the conversation".
    public var category: String {
        switch self {
        case .invalid(let error):
            switch error {
            case .malformed: "malformed op"
            case .unsupportedVersion: "unsupported op version"
            case .bodyTooLarge: "body over the size limit"
            case .bodyHashMismatch: "body does not match its hash"
            case .badSignature: "bad signature"
            case .brokenChain: "broken chain"
            case .unprovenErasure: "erased without proof"
            }
        case .rule(.typeNotAllowed): "op type not allowed in its partition"
        case .rule(.invalidBody): "invalid body"
        case .rule(let violation): violation.description
        case .unknownPartition: "unknown partition"
        case .authorForked: "author forked"
        }
    }

    public var description: String {
        switch self {
        case .invalid(let error): error.description
        case .rule(let violation): violation.description
        case .unknownPartition: "unknown partition"
        case .authorForked(let seq): "the author forked this partition at seq \(seq); later ops are excluded"
        }
    }
}
