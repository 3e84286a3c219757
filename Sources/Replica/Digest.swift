import Identity
import Sodium
import Wire

/// One author's position in a partition: the head of their hash chain (a version-vector entry).
public struct Head: Hashable, Sendable {
    public var author: UserID
    public var maxSeq: UInt64
    public var headID: OpID
    /// Set when a fork proof excludes the author's ops from this seq on.
    public var frozenAt: UInt64?

    public init(author: UserID, maxSeq: UInt64, headID: OpID, frozenAt: UInt64? = nil) {
        (self.author, self.maxSeq, self.headID, self.frozenAt) = (author, maxSeq, headID, frozenAt)
    }
}

/// The digest of a partition's op set (docs/DESIGN.md §3.6): BLAKE2b-256 over the heads sorted by
/// author, each `author ‖ max seq ‖ head op id ‖ frozen-at (0 if none)`. Exact, because chains are
/// hash-linked: equal digests mean equal op sets, hence equal state.
public struct PartitionDigest: Hashable, Sendable, CustomStringConvertible {
    public let raw: Bytes32

    public init(heads: [Head]) {
        let hasher = GenericHash.Hasher()
        hasher.update(Array("parley/digest/v1".utf8))
        for head in heads.sorted(by: { $0.author < $1.author }) where head.maxSeq > 0 || head.frozenAt != nil {
            var w = ByteWriter(capacity: 80)
            w.bytes32(head.author.raw)
            w.u64(head.maxSeq)
            w.bytes32(head.headID.raw)
            w.u64(head.frozenAt ?? 0)
            hasher.update(w.bytes)
        }
        raw = Bytes32(hasher.finalize())!
    }

    public var text: String { Base32.encode(raw.bytes) }
    public var description: String { text }
}

/// Proof that an author signed two different ops at the same (partition, seq): both headers.
/// Every replica that holds it excludes the author's ops in that partition from `seq` on.
public struct ForkProof: Hashable, Sendable {
    public let first: [UInt8]
    public let second: [UInt8]
    public let partition: PartitionID
    public let author: UserID
    public let seq: UInt64

    /// Checks the proof: both headers parse, share partition, author and seq, differ, and are
    /// both validly signed (so nobody can frame an honest author).
    public init(_ a: [UInt8], _ b: [UInt8]) throws(OperationError) {
        // Bodies are not needed: the signature covers the body hash.
        let opA = try ForkProof.headerOnly(a)
        let opB = try ForkProof.headerOnly(b)
        guard opA.partition == opB.partition, opA.author == opB.author, opA.seq == opB.seq, opA.id != opB.id else {
            throw .malformed("fork proof headers do not conflict")
        }
        guard opA.hasValidSignature, opB.hasValidSignature else { throw .badSignature }
        // Canonical order, so the same fork gives the same proof everywhere.
        (first, second) = opA.id < opB.id ? (a, b) : (b, a)
        (partition, author, seq) = (opA.partition, opA.author, opA.seq)
    }

    private static func headerOnly(_ header: [UInt8]) throws(OperationError) -> Operation {
        try Operation(header: header, body: [], bodyAbsent: true)
    }

    /// `first ‖ second` (432 bytes).
    public var encoded: [UInt8] { first + second }

    public init(encoded: [UInt8]) throws(OperationError) {
        guard encoded.count == 2 * Operation.headerBytes else { throw .malformed("fork proof must be \(2 * Operation.headerBytes) bytes") }
        try self.init(Array(encoded[0..<Operation.headerBytes]), Array(encoded[Operation.headerBytes...]))
    }
}
