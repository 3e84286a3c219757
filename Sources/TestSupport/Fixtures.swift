import Identity
import Replica
import Sodium
import Store
import Wire

/// Deterministic test data: identities from fixed seeds, and ops signed without a store.
public enum Fixtures {
    /// The identity with seed `[index, index, ...]`; the same index is the same user in every test.
    public static func identity(_ index: UInt8) -> Identity {
        try! Identity(seed: [UInt8](repeating: index &+ 1, count: 32))
    }

    /// A fixed millisecond clock reading (2026-01-01T00:00:00Z) plus `offset`.
    public static func now(_ offset: UInt64 = 0) -> UInt64 { 1_767_225_600_000 + offset }

    /// An in-memory store holding the given partitions.
    public static func store(partitions: [PartitionDescriptor] = []) throws -> ReplicaStore {
        let store = try ReplicaStore(path: ":memory:")
        for descriptor in partitions { try store.log.ensurePartition(descriptor, joined: true) }
        return store
    }
}

/// A plain post of `text` (no attachments, place or reply): the body most tests write.
public func post(_ text: String) -> OperationBody { .post(text: text, attachments: [], location: nil, replyTo: nil) }

/// Signs ops for any number of authors, keeping each (partition, author) chain, without a store:
/// the ops a set of honest (or dishonest) nodes would write.
public struct OpFactory {
    public struct ChainKey: Hashable { public let partition: PartitionID; public let author: UserID }
    public private(set) var heads: [ChainKey: (seq: UInt64, id: OpID)] = [:]
    private var hlc: UInt64

    public init(startMillis: UInt64 = Fixtures.now()) { hlc = startMillis << 16 }

    /// The next op in `author`'s chain in `partition`.
    public mutating func make(_ body: OperationBody, in partition: PartitionID, by author: Identity, hlcOffset: Int64 = 0) -> Operation {
        make(type: body.type, flags: [], body: body.encoded, in: partition, by: author, hlcOffset: hlcOffset)
    }

    /// The next op in `author`'s chain with a body given as bytes (encrypted or sealed bodies).
    public mutating func make(
        type: OperationType, flags: Operation.Flags, body: [UInt8], in partition: PartitionID, by author: Identity, hlcOffset: Int64 = 0
    ) -> Operation {
        let key = ChainKey(partition: partition, author: author.id)
        let head = heads[key] ?? (0, .zero)
        hlc += 1 << 16
        let stamp = HLC(raw: UInt64(Int64(hlc) + hlcOffset << 16))
        let op = Operation.sign(type: type, flags: flags, partition: partition, seq: head.seq + 1, prev: head.id, hlc: stamp, body: body, by: author)
        heads[key] = (op.seq, op.id)
        return op
    }

    /// An op at an explicit position, ignoring (and not advancing) the chain: forks and gaps.
    public mutating func make(_ body: OperationBody, in partition: PartitionID, by author: Identity, seq: UInt64, prev: OpID) -> Operation {
        make(type: body.type, flags: [], body: body.encoded, in: partition, by: author, seq: seq, prev: prev)
    }

    /// An op with a body given as bytes at an explicit position (forks of encrypted chains).
    public mutating func make(
        type: OperationType, flags: Operation.Flags, body: [UInt8], in partition: PartitionID, by author: Identity, seq: UInt64, prev: OpID
    ) -> Operation {
        hlc += 1 << 16
        return Operation.sign(type: type, flags: flags, partition: partition, seq: seq, prev: prev, hlc: HLC(raw: hlc), body: body, by: author)
    }

    /// Moves a chain's head (to continue a forked branch).
    public mutating func setHead(_ partition: PartitionID, _ author: UserID, seq: UInt64, id: OpID) {
        heads[ChainKey(partition: partition, author: author)] = (seq, id)
    }
}

/// A forked chain: `author` writes m1, m2, then a3, a4 on one branch and b3, b4 on another,
/// all in `partition` — the same seq signed twice, which every replica must catch.
public struct ForkedLog: Sendable {
    public let common: [Operation]
    public let branchA: [Operation]
    public let branchB: [Operation]

    public init(author: Identity, partition: PartitionID) {
        var factory = OpFactory()
        common = [factory.make(post("m1"), in: partition, by: author), factory.make(post("m2"), in: partition, by: author)]
        let a3 = factory.make(post("a3"), in: partition, by: author)
        let a4 = factory.make(post("a4"), in: partition, by: author)
        let b3 = factory.make(post("b3"), in: partition, by: author, seq: 3, prev: common[1].id)
        factory.setHead(partition, author.id, seq: 3, id: b3.id)
        let b4 = factory.make(post("b4"), in: partition, by: author)
        branchA = [a3, a4]
        branchB = [b3, b4]
    }
}

extension ReplicaStore {
    /// `bodies` authored one by one in one transaction: test data in bulk.
    @discardableResult
    public func authorAll(_ bodies: [OperationBody], in partition: PartitionID, by identity: Identity, nowMillis: UInt64) throws -> [Operation] {
        try database.transaction { try bodies.map { try author($0, in: partition, by: identity, nowMillis: nowMillis) } }
    }
}
