import Foundation
import Identity
import Replica
import Store

import struct Replica.Operation

/// The writer of the group-commit figure (`post_ops_per_s`): one identity's posts in one room,
/// a batch per durable transaction (one sync of the WAL each), stored through
/// `ReplicaStore.apply` with the signatures it made itself.
///
/// A batch is signed on other threads while this one stores the ops signed before: Ed25519
/// signing is about two thirds of a post's instructions, and an op's `prev` is the id of the op
/// before, which leaves the signature out (`Operation.Unsigned`), so the signers run ahead along
/// the chain. The chain starts at seq 1: the identity has written nothing in the room before.
struct BatchAuthor {
    let identity: Identity
    let partition: PartitionID
    private var seq: UInt64 = 0
    private var prev = OpID.zero
    private var clock = HybridClock()

    /// The threads that sign a batch: one per core, at most four (the thread that applies
    /// mostly waits for them).
    static let signerThreads = min(max(ProcessInfo.processInfo.activeProcessorCount, 1), 4)

    init(identity: Identity, partition: PartitionID) {
        (self.identity, self.partition) = (identity, partition)
    }

    /// Signs `bodies` as the next ops of the chain and stores them in one durable transaction,
    /// each as it comes in chain order; all of them, or none when one does not apply.
    mutating func author(_ bodies: [OperationBody], into store: ReplicaStore, nowMillis: UInt64) throws -> [Operation] {
        let chain = bodies.map { body in
            seq += 1
            let unsigned = Operation.Unsigned(
                type: body.type, partition: partition, seq: seq, prev: prev, hlc: clock.tick(nowMillis: nowMillis), body: body.encoded,
                author: identity.id)
            prev = unsigned.id
            return unsigned
        }
        let threads = Self.signerThreads
        let signer = ChainSigner(count: chain.count, signers: threads)
        for first in 0..<threads {
            Thread { [identity] in
                for index in stride(from: first, to: chain.count, by: threads) {
                    guard !signer.isCancelled else { break }
                    signer.deliver(chain[index].signed(by: identity), at: index)
                }
                signer.finish()
            }.start()
        }
        defer {
            signer.cancel()
            signer.waitUntilFinished()
        }
        return try store.database.transaction(.immediate, durable: true) {
            var ops: [Operation] = []
            ops.reserveCapacity(bodies.count)
            while ops.count < bodies.count {
                let signed = signer.take(from: ops.count)
                let outcomes = try store.apply(signed, nowMillis: nowMillis, signaturesChecked: true)
                guard outcomes.allSatisfy({ $0 == .applied }) else { throw StoreError.damaged("a benchmark op was not applied: \(Set(outcomes))") }
                ops += signed
            }
            return ops
        }
    }
}

/// The hand-over between the signer threads of `BatchAuthor` and the thread that applies: ops
/// in chain order. Signers finish ops out of order (each takes every n-th), so an op is handed
/// over once every op before it is signed. The signers are the slower side, so the taker waits
/// for a handful of ops at a time rather than waking for each (a wake-up costs about as much as
/// storing an op).
private final class ChainSigner: @unchecked Sendable {
    // @unchecked: every field is guarded by `condition`.
    private let condition = NSCondition()
    /// Signed ops by chain index; nil until signed.
    private var ops: [Operation?]
    /// Ops signed from index 0 on without a gap.
    private var ready = 0
    private var cancelled = false
    private var runningSigners: Int
    /// How many ops the taker waits for (0: it is not waiting).
    private var awaited = 0

    /// Ops the taker waits for at once, at most.
    static let handOff = 16

    init(count: Int, signers: Int) {
        ops = Array(repeating: nil, count: count)
        runningSigners = signers
    }

    /// Checked by the signers before each op.
    var isCancelled: Bool {
        condition.lock()
        defer { condition.unlock() }
        return cancelled
    }

    /// A signer's op at chain index `index`.
    func deliver(_ op: Operation, at index: Int) {
        condition.lock()
        ops[index] = op
        while ready < ops.count, ops[ready] != nil { ready += 1 }
        if awaited > 0, ready >= awaited { condition.signal() }
        condition.unlock()
    }

    /// A signer stopped (its share signed, or cancelled).
    func finish() {
        condition.lock()
        runningSigners -= 1
        condition.broadcast()
        condition.unlock()
    }

    /// The ops from `index` on that are signed, at least one: waits for up to `handOff` of them
    /// when none is. Called only for indices the signers will deliver (they stop early only
    /// after `cancel`, which the taker calls last).
    func take(from index: Int) -> [Operation] {
        condition.lock()
        defer { condition.unlock() }
        if ready <= index {
            awaited = min(index + Self.handOff, ops.count)
            while ready < awaited, runningSigners > 0 { condition.wait() }
            awaited = 0
        }
        return ops[index..<ready].map { $0! }
    }

    func cancel() {
        condition.lock()
        cancelled = true
        condition.unlock()
    }

    func waitUntilFinished() {
        condition.lock()
        defer { condition.unlock() }
        while runningSigners > 0 { condition.wait() }
    }
}
