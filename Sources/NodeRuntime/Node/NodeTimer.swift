import Transport

/// One of the node's timers, for one purpose: discovery's tick, a sync session's tick, the look
/// for other processes' writes, address sharing, the log's summaries, a delayed push (fault
/// injection). The node's one timer mechanism is its event loop's timers (Transport's
/// `EventLoop.schedule`): they fire on the loop's thread, which is the node's executor, so the
/// action runs isolated to the node at once, with no task and no hop through another thread
/// (docs/ARCHITECTURE.md, *The node runs on its event loop's thread*).
///
/// `arm` replaces the pending firing (each `.scheduleTick` re-arms its purpose's timer), `cancel`
/// drops it; the node cancels every timer when it stops, so the loop's thread can end. A firing
/// already due when it is replaced may still run, as a woken sleeper did: actions check that
/// what they act for (the node running, the same link) is still there.
struct NodeTimer {
    private var pending: EventLoop.TimerID?

    /// Runs `action`, made isolated to `node`, after `millis` milliseconds, instead of any firing
    /// still pending.
    mutating func arm(after millis: UInt64, on node: isolated Node, _ action: @escaping () -> Void) {
        arm(at: .now + .milliseconds(Int64(clamping: millis)), on: node, action)
    }

    /// Runs `action`, made isolated to `node`, at `deadline`, instead of any firing still pending.
    mutating func arm(at deadline: ContinuousClock.Instant, on node: isolated Node, _ action: @escaping () -> Void) {
        cancel(on: node)
        let work = NodeWork(run: action)
        pending = node.loop.schedule(at: deadline) { [node] in
            node.assumeIsolated { _ in work.run() }
        }
    }

    /// Drops the pending firing, if any.
    mutating func cancel(on node: isolated Node) {
        if let pending { node.loop.cancel(pending) }
        pending = nil
    }
}

/// A node-isolated action carried through the loop's timer table, which holds only `Sendable`
/// closures. Unchecked, and sound: the action runs only isolated to the node (`assumeIsolated`
/// on the node's own loop thread), where it was made, as the body of a task on the node would.
private struct NodeWork: @unchecked Sendable {
    let run: () -> Void
}
