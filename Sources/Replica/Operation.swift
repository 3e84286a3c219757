import Dispatch
import Identity
import Sodium
import Wire

/// One signed, immutable change to a partition (docs/DESIGN.md §3.3). Big-endian, fixed layout:
///
/// | off | len | field |
/// |---|---|---|
/// | 0 | 1 | version = 1 |
/// | 1 | 1 | op type (`OperationType`) |
/// | 2 | 2 | flags: bit0 body encrypted, bit1 body erased |
/// | 4 | 4 | body length, ≤ 64 KiB |
/// | 8 | 32 | partition id |
/// | 40 | 32 | author (Ed25519 public key) |
/// | 72 | 8 | seq: 1-based per (partition, author), no gaps |
/// | 80 | 32 | prev: op id of (partition, author, seq-1); zeros for seq 1 |
/// | 112 | 8 | hlc |
/// | 120 | 32 | body hash: BLAKE2b-256(body) |
/// | 152 | 64 | signature: Ed25519 over "parley/op/v1" ‖ bytes 0..<152 |
/// | 216 | n | body |
///
/// op id = BLAKE2b-256(bytes 0..<152). Relays check signature, chain and body hash without
/// reading an encrypted body.
///
/// An op may also be held *erased*: its author deleted it (a post, or an edit of that post),
/// so replicas dropped its body from storage and keep the signed header, which still gives the
/// op's id, its place in the chain and its signature. Its body hash can no longer be checked;
/// instead the op carries its `erasure`, the author's delete that erased it, which anyone can
/// verify (`erasureProblem`). Flag bit1 is another thing: an op signed with no body at all.
public struct Operation: Hashable, Sendable {
    public static let version: UInt8 = 1
    public static let headerBytes = 216
    public static let signedBytes = 152
    public static let maxBodyBytes = 64 * 1024
    static let signatureDomain = Array("parley/op/v1".utf8)

    public struct Flags: OptionSet, Hashable, Sendable {
        public let rawValue: UInt16
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        public static let bodyEncrypted = Flags(rawValue: 1 << 0)
        public static let bodyErased = Flags(rawValue: 1 << 1)
    }

    /// The 216 header bytes exactly as signed and sent.
    public let header: [UInt8]
    public let body: [UInt8]
    /// BLAKE2b-256 of `header[0..<152]`.
    public let id: OpID
    /// The author's delete that erased this op's body (nil: the body is here).
    public let erasure: Erasure?
    /// The body was dropped because the op fell outside its room's retention (`init(expiredHeader:)`).
    public let isExpired: Bool

    public let type: UInt8
    public let flags: Flags
    public let partition: PartitionID
    public let author: UserID
    public let seq: UInt64
    public let prev: OpID
    public let hlc: HLC
    public let bodyHash: Bytes32

    /// Builds and signs a new op. The caller (the store) supplies seq, prev and hlc from its head and clock.
    public static func sign(
        type: OperationType, flags: Flags = [], partition: PartitionID, seq: UInt64, prev: OpID,
        hlc: HLC, body: [UInt8], by identity: Identity
    ) -> Operation {
        Unsigned(type: type, flags: flags, partition: partition, seq: seq, prev: prev, hlc: hlc, body: body, author: identity.id)
            .signed(by: identity)
    }

    /// An op before its signature: the signed bytes and the op id, which the signature does not
    /// enter. So a chain's ids (each op's `prev`) follow from the head alone, and its ops can be
    /// signed in any order, on several threads (the benchmark's `BatchAuthor`).
    public struct Unsigned: Sendable {
        /// Bytes 0..<152 of the header.
        public let signedBytes: [UInt8]
        public let body: [UInt8]
        /// BLAKE2b-256 of `signedBytes`: the id the signed op will have.
        public let id: OpID
        public let author: UserID

        public init(
            type: OperationType, flags: Flags = [], partition: PartitionID, seq: UInt64, prev: OpID, hlc: HLC, body: [UInt8],
            author: UserID
        ) {
            precondition(body.count <= maxBodyBytes, "body over the limit must be refused before signing")
            var w = ByteWriter(capacity: headerBytes)
            w.u8(version)
            w.u8(type.rawValue)
            w.u16(flags.rawValue)
            w.u32(UInt32(body.count))
            w.partitionID(partition)
            w.user(author)
            w.u64(seq)
            w.opID(prev)
            w.u64(hlc.raw)
            w.bytes32(body.withUnsafeBytes { Bytes32.blake2b($0) })
            signedBytes = w.bytes
            (self.body, self.author) = (body, author)
            id = signedBytes.withUnsafeBytes { OpID(Bytes32.blake2b($0)) }
        }

        /// The op, signed by `identity`, which must be the author it was built for.
        public func signed(by identity: Identity) -> Operation {
            precondition(identity.id == author, "an op is signed by its own author")
            let signature = identity.sign(signatureDomain + signedBytes)
            return try! Operation(header: signedBytes + signature, body: body, bodyAbsent: false, id: id, erasure: nil, expired: false)
        }
    }

    /// Parses a header and body received from anywhere. Checks only the layout (sizes, version,
    /// body length); `verify` checks hash and signature. `bodyAbsent` parses a header alone
    /// (fork proofs), whose body is then empty.
    public init(header: [UInt8], body: [UInt8], bodyAbsent: Bool = false) throws(OperationError) {
        try self.init(header: header, body: body, bodyAbsent: bodyAbsent, id: nil, erasure: nil, expired: false)
    }

    /// An op whose body its replicas dropped because it fell outside its room's retention
    /// (docs/ARCHITECTURE.md, *Retention*): the signed header alone. Nothing proves the drop;
    /// a receiver takes it only if the op is outside the retention by its own view.
    public init(expiredHeader header: [UInt8]) throws(OperationError) {
        try self.init(header: header, body: [], bodyAbsent: true, id: nil, erasure: nil, expired: true)
    }

    /// An op whose body its author's delete `proof` erased: the header alone, and the proof.
    /// Checks only the layouts; `erasureProblem` checks that the proof proves the erasure.
    public init(erasedHeader header: [UInt8], proof: Operation) throws(OperationError) {
        guard proof.erasure == nil else { throw .malformed("an erasure proof must be whole") }
        try self.init(header: header, body: [], bodyAbsent: true, id: nil, erasure: Erasure(proof: proof), expired: false)
    }

    /// `id`: the op id when the caller computed it already (`Unsigned.signed(by:)`), else nil.
    private init(header: [UInt8], body: [UInt8], bodyAbsent: Bool, id: OpID?, erasure: Erasure?, expired: Bool) throws(OperationError) {
        guard header.count == Operation.headerBytes else { throw .malformed("header is \(header.count) bytes, expected \(Operation.headerBytes)") }
        var r = ByteReader(header)
        do {
            let version = try r.u8("version")
            guard version == Operation.version else { throw OperationError.unsupportedVersion(version) }
            type = try r.u8("type")
            flags = Flags(rawValue: try r.u16("flags"))
            let length = Int(try r.u32("body length"))
            guard length <= Operation.maxBodyBytes else { throw OperationError.bodyTooLarge(length) }
            let erased = flags.contains(.bodyErased)
            guard bodyAbsent || (erased ? body.isEmpty : body.count == length) else {
                throw OperationError.malformed("body is \(body.count) bytes, header says \(length)")
            }
            partition = try r.partitionID("partition")
            author = try r.user("author")
            seq = try r.u64("seq")
            guard seq >= 1 else { throw OperationError.malformed("seq must start at 1") }
            prev = try r.opID("prev")
            guard (seq == 1) == prev.raw.isZero else { throw OperationError.malformed(seq == 1 ? "seq 1 must have a zero prev" : "prev is zero after seq 1") }
            hlc = HLC(raw: try r.u64("hlc"))
            bodyHash = try r.bytes32("body hash")
        } catch let error as OperationError {
            throw error
        } catch {
            throw .malformed("\(error)")
        }
        self.header = header
        self.body = body
        self.erasure = erasure
        self.isExpired = expired
        self.id = id ?? header.withUnsafeBytes { OpID(Bytes32.blake2b(UnsafeRawBufferPointer(rebasing: $0[0..<Operation.signedBytes]))) }
    }

    /// Decodes `header ‖ body` from one buffer (export files, OPS frames).
    public init(encoded: [UInt8]) throws(OperationError) {
        guard encoded.count >= Operation.headerBytes else { throw .malformed("only \(encoded.count) bytes, a header is \(Operation.headerBytes)") }
        try self.init(header: Array(encoded[0..<Operation.headerBytes]), body: Array(encoded[Operation.headerBytes...]))
    }

    /// `header ‖ body`.
    public var encoded: [UInt8] { header + body }

    public var signature: [UInt8] { Array(header[Operation.signedBytes..<Operation.headerBytes]) }

    /// The declared body length (the body itself may be erased).
    public var bodyLength: Int {
        Int(header[4]) << 24 | Int(header[5]) << 16 | Int(header[6]) << 8 | Int(header[7])
    }

    /// Whether the body matches the hash in the header. A body signed absent (flag bit1)
    /// matches by definition; so does an erased one, whose `erasure` stands for it and must be
    /// checked instead (`erasureProblem`).
    public var hasValidBodyHash: Bool {
        flags.contains(.bodyErased) || erasure != nil || isExpired || body.withUnsafeBytes { Bytes32.blake2b($0) } == bodyHash
    }

    /// Whether the body was erased after its author deleted the op (see `erasure`).
    public var isErased: Bool { erasure != nil }

    /// Whether the author's signature covers the header (and through the body hash, the body).
    public var hasValidSignature: Bool {
        let message = Operation.signatureDomain + header[0..<Operation.signedBytes]
        return header.withUnsafeBytes { h in
            message.withUnsafeBytes { m in
                author.publicKey.withUnsafeBytes { pk in
                    Signing.isValidSignature(UnsafeRawBufferPointer(rebasing: h[Operation.signedBytes..<Operation.headerBytes]), for: m, publicKey: pk)
                }
            }
        }
    }

    /// Whether each op's own signature verifies, in order; the checks run on every core when
    /// there are enough of them to share (an import file's batch, a run about to be served).
    public static func signaturesAreValid(_ ops: some Collection<Operation>) -> [Bool] {
        let ops = Array(ops)
        var valid = [Bool](repeating: false, count: ops.count)
        guard ops.count >= 16 else {
            for index in ops.indices { valid[index] = ops[index].hasValidSignature }
            return valid
        }
        valid.withUnsafeMutableBufferPointer { results in
            // Each iteration writes only its own element, so the threads never share one.
            nonisolated(unsafe) let results = results
            DispatchQueue.concurrentPerform(iterations: ops.count) { index in
                results[index] = ops[index].hasValidSignature
            }
        }
        return valid
    }

    /// Checks body hash, then signature (cheapest first).
    public func verify() throws(OperationError) {
        guard hasValidBodyHash else { throw .bodyHashMismatch }
        guard hasValidSignature else { throw .badSignature }
    }

    public static func == (a: Operation, b: Operation) -> Bool {
        a.id == b.id && a.header == b.header && a.body == b.body && a.erasure == b.erasure && a.isExpired == b.isExpired
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
}

// MARK: - Fields of a stored header

extension Operation {
    /// Where the author's key lies in a header.
    static let authorBytes = 40..<72

    /// The id of the op with this header: BLAKE2b-256 of its signed bytes. For a header whose
    /// layout was checked when it was stored (`Operation(header:body:)`), read without parsing it.
    public static func id(ofHeader header: [UInt8]) -> OpID {
        header.withUnsafeBytes { OpID(Bytes32.blake2b(UnsafeRawBufferPointer(rebasing: $0[0..<signedBytes]))) }
    }

    /// The author field of such a header.
    public static func author(ofHeader header: [UInt8]) -> UserID? {
        UserID(publicKey: header[authorBytes])
    }

    /// Calls `body` with the signature field of such a header, without copying it.
    public static func withSignature<R>(ofHeader header: [UInt8], _ body: (UnsafeRawBufferPointer) -> R) -> R {
        header.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[signedBytes..<headerBytes])) }
    }
}

/// Checks a contiguous run of one author's ops in one partition with a single signature check:
/// each op's prev must be the id of the one before, each body must match its hash, and the last
/// op's signature then authenticates the whole chain (docs/DESIGN.md §3.3). `after` is the id of the op
/// just before the run (zero when the run starts at seq 1).
public func verifyChain(_ run: ArraySlice<Operation>, after previous: OpID) throws(OperationError) {
    guard let first = run.first, let last = run.last else { return }
    var expectedPrev = previous
    var expectedSeq = first.seq
    for op in run {
        guard op.partition == first.partition, op.author == first.author else { throw .malformed("a chain run mixes partitions or authors") }
        guard op.seq == expectedSeq else { throw .brokenChain }
        guard op.prev == expectedPrev else { throw .brokenChain }
        guard op.hasValidBodyHash else { throw .bodyHashMismatch }
        expectedPrev = op.id
        expectedSeq += 1
    }
    guard last.hasValidSignature else { throw .badSignature }
}

/// Why an op was refused. Each case names one check of the validation order (docs/DESIGN.md §3.3).
public enum OperationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The bytes do not form an op envelope.
    case malformed(String)
    /// The envelope version is not one this build understands.
    case unsupportedVersion(UInt8)
    /// The body is over 64 KiB.
    case bodyTooLarge(Int)
    /// The body does not match the hash in the header.
    case bodyHashMismatch
    /// The signature does not verify under the author's key.
    case badSignature
    /// prev is not the id of the author's previous op, or seq is out of step.
    case brokenChain
    /// An op without its body whose erasure proof does not prove that its author erased it
    /// (`Operation.erasureProblem`). An honest node checks every proof it holds, so this is
    /// the sender's doing, like a bad signature.
    case unprovenErasure(String)

    public var description: String {
        switch self {
        case .malformed(let why): "malformed op: \(why)"
        case .unsupportedVersion(let v): "unsupported op version \(v)"
        case .bodyTooLarge(let n): "op body of \(n) bytes is over the limit of \(Operation.maxBodyBytes)"
        case .bodyHashMismatch: "op body does not match its hash"
        case .badSignature: "op signature is not valid"
        case .brokenChain: "op does not link to the author's previous op"
        case .unprovenErasure(let why): "op arrived without its body, and \(why)"
        }
    }
}

extension Bytes32 {
    /// BLAKE2b-256 of `input`, hashed into the value itself: op ids and body hashes, on every
    /// op's path, without an array on the way (`Bytes32.bytes` says why that matters).
    static func blake2b(_ input: UnsafeRawBufferPointer) -> Bytes32 {
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &words) { GenericHash.hash(input, into: $0) }
        return withUnsafeBytes(of: &words) { Bytes32($0) }
    }
}
