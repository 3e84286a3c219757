import Identity
import Wire

/// The proof that an op's body was erased by its own author: the author's delete (header and
/// body, signed) of the post the op is, or of the post the op edits.
///
/// A body is erased only on its author's word, and that word travels with the erased op, so a
/// replica that receives an op without its body verifies the erasure itself and never takes
/// it on the sender's: a relay cannot make a message vanish that its author did not delete.
public struct Erasure: Hashable, Sendable {
    /// Held in an array: an `Operation` cannot hold another inline.
    private let storage: [Operation]

    public init(proof: Operation) { storage = [proof] }

    /// The author's delete op, whole.
    public var proof: Operation { storage[0] }
}

extension Operation {
    /// The most edits one delete erases (`OperationBody.delete`'s `erasing`): 8 bytes each, so
    /// a delete body stays under 33 KiB. Edits of a post beyond these keep their bodies.
    public static let maxErasedEdits = 4_096

    /// Why this op's `erasure` does not prove that its author erased it, or nil when it does:
    /// the proof is a whole, plaintext delete by the same author in the same partition, later
    /// in the chain, with a good body hash, that names this op (a post: as its target, by id
    /// and seq; an edit: in its `erasing` list, above the target's seq), and whose own signature
    /// verifies (checked last, the costliest). The op itself must be a plaintext post or edit.
    /// The caller checks the op's own signature or chain, and that the proof's target is the
    /// author's post (`ReplicaStore`), as for any delete.
    public func erasureProblem() -> String? {
        guard let proof = erasure?.proof else { return "it carries no erasure proof" }
        guard !flags.contains(.bodyEncrypted), !proof.flags.contains(.bodyEncrypted) else { return "encrypted bodies are not erased" }
        guard proof.type == OperationType.delete.rawValue else { return "the erasure proof is not a delete" }
        guard proof.author == author, proof.partition == partition else { return "the erasure proof is another author's or another partition's" }
        guard proof.seq > seq else { return "the erasure proof does not come after the op in its author's chain" }
        guard proof.body.withUnsafeBytes({ Bytes32.blake2b($0) }) == proof.bodyHash else { return "the erasure proof's body does not match its hash" }
        guard case .delete(let target, let targetSeq, let erasing)? = try? OperationBody(type: proof.type, decoding: proof.body) else {
            return "the erasure proof's body is not a delete"
        }
        switch OperationType(rawValue: type) {
        case .post:
            guard target == id, targetSeq == seq else { return "the erasure proof deletes another op" }
        case .edit:
            guard targetSeq < seq, erasing.contains(seq) else { return "the erasure proof does not name this edit" }
        default:
            return "only posts and their edits are erased"
        }
        guard proof.hasValidSignature else { return "the erasure proof's signature is not valid" }
        return nil
    }

    /// The bytes of this op as sync and export carry it: `header ‖ body` for a whole op,
    /// `header ‖ proof header ‖ proof body` for an erased one (the carrier says which).
    public var carriedBytes: [UInt8] {
        if isExpired { return header }
        guard let proof = erasure?.proof else { return header + body }
        return header + proof.header + proof.body
    }

    /// `carriedBytes.count`, without building them.
    public var carriedByteCount: Int {
        isExpired ? header.count : header.count + (erasure.map { $0.proof.header.count + $0.proof.body.count } ?? body.count)
    }

    /// The largest erased op as carried: its header and one whole op.
    public static let maxErasedCarriedBytes = 2 * headerBytes + maxBodyBytes

    /// Decodes `header ‖ proof header ‖ proof body` (see `carriedBytes`).
    public init(erasedEncoding bytes: some Collection<UInt8>) throws(OperationError) {
        let bytes = Array(bytes)
        guard bytes.count >= 2 * Operation.headerBytes else { throw .malformed("an erased op of \(bytes.count) bytes has no erasure proof") }
        let proof = try Operation(encoded: Array(bytes[Operation.headerBytes...]))
        try self.init(erasedHeader: Array(bytes[0..<Operation.headerBytes]), proof: proof)
    }
}
