import Replica

import class Foundation.NSCondition

/// The hand-over between the signer threads of `authorSigningAhead` and the thread that
/// applies: ops in chain order. Signers finish ops out of order (each takes every n-th), so an
/// op is handed over once every op before it is signed. The signers are the slower side, so the
/// taker waits for a handful of ops at a time rather than waking for each (a wake-up costs about
/// as much as storing an op).
final class ChainSigner: @unchecked Sendable {
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
