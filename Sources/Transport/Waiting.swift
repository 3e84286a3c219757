import Synchronization

/// The continuation a parked task waits on. Checked in debug builds, where the tests run: a
/// waiter resumed twice, or never, is reported there. Unsafe in release builds: every resolver
/// removes its waiter under the socket's lock first (`Waiter`), so each is resumed exactly once,
/// and a checked one cost every wait a generic metadata lookup in each copy of its waiter and
/// an object of its own (about 1% of a 3-node write's instructions).
#if DEBUG
    typealias WaiterContinuation<Value: Sendable> = CheckedContinuation<Value, any Error>
#else
    typealias WaiterContinuation<Value: Sendable> = UnsafeContinuation<Value, any Error>
#endif

/// A task parked until its socket is ready, its deadline passes, or it is cancelled.
///
/// Waiters live in their socket object's locked state. Whoever resolves one — the operation
/// itself, the loop's handler, a deadline timer, a cancellation handler, `close()` — first
/// removes it under that lock, so each continuation is resumed exactly once.
struct Waiter<Value: Sendable, Payload> {
    let id: UInt64
    /// What the waiter needs: a byte count, an offset, a datagram to send…
    let payload: Payload
    let continuation: WaiterContinuation<Value>
    var timer: EventLoop.TimerID?
}

/// Waiters in arrival order.
struct WaitQueue<Value: Sendable, Payload> {
    private var waiters: [Waiter<Value, Payload>] = []

    var isEmpty: Bool { waiters.isEmpty }
    var count: Int { waiters.count }
    var first: Waiter<Value, Payload>? { waiters.first }

    mutating func append(_ waiter: Waiter<Value, Payload>) { waiters.append(waiter) }

    mutating func popFirst() -> Waiter<Value, Payload>? {
        waiters.isEmpty ? nil : waiters.removeFirst()
    }

    mutating func remove(id: UInt64) -> Waiter<Value, Payload>? {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return nil }
        return waiters.remove(at: index)
    }

    mutating func removeAll() -> [Waiter<Value, Payload>] {
        defer { waiters = [] }
        return waiters
    }
}

/// Continuations to resume once the lock that found them is released, and the timers of the
/// waiters they belonged to (cancelled at once: a stale timer would only find nothing to do).
///
/// Resuming outside the lock keeps lock sections short and free of scheduler work.
struct Wakeups: Sendable {
    private var actions: [@Sendable () -> Void] = []

    mutating func resume<Value, Payload>(_ waiter: Waiter<Value, Payload>, returning value: Value, loop: EventLoop) {
        if let timer = waiter.timer { loop.cancel(timer) }
        let continuation = waiter.continuation
        actions.append { continuation.resume(returning: value) }
    }

    mutating func resume<Value, Payload>(_ waiter: Waiter<Value, Payload>, throwing error: any Error, loop: EventLoop) {
        if let timer = waiter.timer { loop.cancel(timer) }
        let continuation = waiter.continuation
        actions.append { continuation.resume(throwing: error) }
    }

    /// Resumes a continuation that never became a parked waiter.
    mutating func resume<Value: Sendable>(
        _ continuation: WaiterContinuation<Value>, with result: Result<Value, any Error>
    ) {
        actions.append { continuation.resume(with: result) }
    }

    func run() {
        for action in actions { action() }
    }
}

/// Unique ids for waiters, so a timer or a cancellation handler can name the waiter it is for.
private let nextWaiterID = Atomic<UInt64>(1)

/// Parks the current task.
///
/// `park` runs at once, on the caller's executor, with a fresh waiter id; under its object's
/// lock it must either resolve the continuation or store it as a waiter. It must also check
/// `Task.isCancelled` before storing: a task cancelled earlier has already run its cancellation
/// handler, which found nothing to withdraw. `withdraw` runs on cancellation and resumes the
/// waiter with `CancellationError` if it is still parked.
nonisolated(nonsending) func suspend<Value: Sendable>(
    withdraw: @escaping @Sendable (_ id: UInt64) -> Void,
    _ park: (_ id: UInt64, _ continuation: WaiterContinuation<Value>) -> Void
) async throws -> Value {
    let id = nextWaiterID.wrappingAdd(1, ordering: .relaxed).oldValue
    return try await withTaskCancellationHandler {
        #if DEBUG
            try await withCheckedThrowingContinuation { continuation in park(id, continuation) }
        #else
            try await withUnsafeThrowingContinuation { continuation in park(id, continuation) }
        #endif
    } onCancel: {
        withdraw(id)
    }
}

/// A waiter id for an operation that does not support cancellation.
func makeWaiterID() -> UInt64 {
    nextWaiterID.wrappingAdd(1, ordering: .relaxed).oldValue
}
