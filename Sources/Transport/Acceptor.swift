import Glibc
import Synchronization

/// The accepting machinery that `TCPListener` and `UnixListener` share: waiting `accept()`
/// calls queued in order, each woken by the event loop when the listening socket is readable,
/// with deadlines, cancellation and `close()` failing every waiter with `.closed`.
///
/// Accepting is pulled, not pushed: a connection is taken from the kernel only when a caller
/// asks for one, so the kernel's backlog bounds the waiting connections and a flood cannot grow
/// memory here. The listeners differ only in how one connection is taken (`takeOne`) and what
/// closing removes (`onClose`: the socket file of a Unix listener).
final class Acceptor<Connection: Sendable>: Sendable {
    /// Takes one waiting connection from the listening descriptor: a connection, an error, or
    /// nil when none is waiting. Called with the acceptor's lock held.
    typealias TakeOne = @Sendable (_ listeningFD: Int32) -> Result<Connection, any Error>?

    private let loop: EventLoop
    private let registration: EventLoop.Registration
    private let state: Mutex<State>
    private let takeOne: TakeOne
    private let onClose: @Sendable () -> Void
    /// What a timed-out `accept` names (`accept on 0.0.0.0:7748`).
    private let operation: String

    private struct State {
        var fd: Int32
        var isClosed = false
        var acceptors = WaitQueue<Connection, Void>()
    }

    /// Watches the listening descriptor `fd` (already bound and listening) on `loop`.
    init(fd: Int32, loop: EventLoop, operation: String, takeOne: @escaping TakeOne, onClose: @escaping @Sendable () -> Void = {}) {
        self.loop = loop
        self.registration = loop.makeRegistration()
        self.state = Mutex(State(fd: fd))
        self.takeOne = takeOne
        self.onClose = onClose
        self.operation = operation
        loop.attach(registration, fd: fd, handler: self)
    }

    /// The next incoming connection; waits until one arrives. Throws `.closed` once closed,
    /// `.timedOut` at `deadline`, `CancellationError`, or what `takeOne` reported.
    func accept(deadline: ContinuousClock.Instant?) async throws -> Connection {
        let cancel: @Sendable (UInt64) -> Void = { [self] id in withdraw(id, error: CancellationError()) }
        return try await suspend(withdraw: cancel) { id, continuation in
            state.withLock { state in
                var wakeups = Wakeups()
                if state.isClosed {
                    wakeups.resume(continuation, with: .failure(TransportError.closed))
                } else if state.acceptors.isEmpty, let result = takeOne(state.fd) {
                    wakeups.resume(continuation, with: result)
                } else if Task.isCancelled {
                    wakeups.resume(continuation, with: .failure(CancellationError()))
                } else {
                    var waiter = Waiter(id: id, payload: (), continuation: continuation)
                    if let deadline {
                        let error = TransportError.timedOut(operation: operation)
                        waiter.timer = loop.schedule(at: deadline) { [weak self] in
                            self?.withdraw(id, error: error)
                        }
                    }
                    state.acceptors.append(waiter)
                    loop.setInterest(registration, .read)
                }
                return wakeups
            }.run()
        }
    }

    /// Stops listening (closes the descriptor, then `onClose`) and fails every waiter with
    /// `.closed`; idempotent.
    func close() {
        state.withLock { state in
            var wakeups = Wakeups()
            guard !state.isClosed else { return wakeups }
            state.isClosed = true
            loop.deregister(registration)
            Descriptor.close(state.fd)
            onClose()
            for waiter in state.acceptors.removeAll() {
                wakeups.resume(waiter, throwing: TransportError.closed, loop: loop)
            }
            return wakeups
        }.run()
    }

    private func withdraw(_ id: UInt64, error: any Error) {
        state.withLock { state in
            var wakeups = Wakeups()
            if let waiter = state.acceptors.remove(id: id) {
                wakeups.resume(waiter, throwing: error, loop: loop)
                if state.acceptors.isEmpty, !state.isClosed { loop.setInterest(registration, []) }
            }
            return wakeups
        }.run()
    }
}

extension Acceptor: IOEventHandler {
    func handleIO(_ ready: IOInterest) {
        state.withLock { state in
            var wakeups = Wakeups()
            guard !state.isClosed else { return wakeups }
            while let acceptor = state.acceptors.first, let result = takeOne(state.fd) {
                _ = state.acceptors.popFirst()
                switch result {
                case .success(let connection): wakeups.resume(acceptor, returning: connection, loop: loop)
                case .failure(let error): wakeups.resume(acceptor, throwing: error, loop: loop)
                }
            }
            if state.acceptors.isEmpty { loop.setInterest(registration, []) }
            return wakeups
        }.run()
    }
}
