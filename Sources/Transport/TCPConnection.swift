import Glibc
import Synchronization

/// A TCP connection with async reads and writes, driven by the process's event loop.
///
/// - Reading: `read` returns what has arrived (empty at end of stream); `readExactly` collects a
///   fixed count, for length-prefixed frames. Concurrent reads are served in call order.
/// - Writing: `write` returns once the kernel has accepted every byte, so a writer facing a slow
///   peer waits (backpressure) instead of growing memory. `enqueue` queues bytes without waiting,
///   up to `sendBufferLimit`, for an actor that must not suspend per frame. Bytes leave in call
///   order and writes never interleave; `write` and `flush` start on the caller's executor, so
///   calls an actor makes in order are queued in that order.
/// - Closing: `close()` is idempotent, wakes every pending operation with `.closed` and
///   releases the descriptor at once. An object dropped without `close()` closes in `deinit`.
///
/// Sendable: every mutable field lives in one `Mutex`; system calls on the descriptor happen
/// under it, which is what makes `close()` safe against a concurrent read (the descriptor
/// number cannot be reused mid-call). The calls are non-blocking, so the lock is held briefly.
public final class TCPConnection: Sendable {
    /// The default `sendBufferLimit`: 4 MiB, the kernel's own send-buffer ceiling here
    /// (`net.ipv4.tcp_wmem`), four maximal frames (docs/DESIGN.md §7: frame ≤ 1 MiB).
    public static let defaultSendBufferLimit = 4 << 20

    /// This side's address (the port the kernel chose for an outgoing connection).
    public let localAddress: SocketAddress
    /// The peer's address: count unauthenticated connections per `remoteAddress.unmappedHost`.
    public let remoteAddress: SocketAddress

    /// The loop the connection's reads and writes run on: a task that handles them should prefer it.
    public let loop: EventLoop
    let registration: EventLoop.Registration
    let state: Mutex<State>

    struct State {
        var fd: Int32
        /// Set once the connection is closed: what later operations throw.
        var closeReason: TransportError?
        var isConnecting: Bool
        var connectWaiter: Waiter<Void, Void>?
        var interest: IOInterest = []
        var readers = WaitQueue<[UInt8], Int>()  // payload: the most bytes to return
        var reachedEOF = false
        var outgoing = OutgoingQueue()
        var writeWaiters = WaitQueue<Void, Int>()  // payload: the `sentTotal` that completes it
        var enqueuedTotal = 0
        var sentTotal = 0
        var sendBufferLimit = TCPConnection.defaultSendBufferLimit
        /// Set when a send failed: later writes throw it, reads go on.
        var writeFailure: TransportError?
        var writeShutdown = WriteShutdown.open
        var delayTimer: EventLoop.TimerID?
        var faults = FaultInjection.none
        /// Where `recv` writes, kept for the connection's life (made at the first read).
        var receiveBuffer: ReceiveBuffer?
    }

    /// A buffer `recv` writes into before the bytes received are copied out at their size.
    /// Allocating the read's whole capacity for every `recv` (64 KiB, also for the one that finds
    /// nothing) went through the standard library's generic array allocation, which on Linux looks
    /// up the array's type metadata at run time, on every read of every link.
    final class ReceiveBuffer {
        let bytes: UnsafeMutableRawBufferPointer

        init(capacity: Int) {
            bytes = .allocate(byteCount: capacity, alignment: 16)
        }

        deinit {
            bytes.deallocate()
        }
    }

    enum WriteShutdown {
        case open, requested, done
    }

    /// Wraps a connected (or connecting) non-blocking descriptor and registers it with `loop`.
    /// `isTCP: false` skips the TCP options: `UnixConnection` reuses this stream machinery, which
    /// is the same for any stream socket.
    init(
        fd: Int32, local: SocketAddress, remote: SocketAddress, isConnecting: Bool, loop: EventLoop = .shared,
        isTCP: Bool = true
    ) {
        if isTCP { Descriptor.configureTCP(fd) }
        self.localAddress = local
        self.remoteAddress = remote
        self.loop = loop
        self.registration = loop.makeRegistration()
        self.state = Mutex(State(fd: fd, isConnecting: isConnecting))
        loop.attach(registration, fd: fd, handler: self)
    }

    deinit {
        close()
    }

    /// True once `close()` ran or the connection failed for good.
    public var isClosed: Bool {
        state.withLock { $0.closeReason != nil }
    }

    /// Bytes queued by `write`/`enqueue` that the kernel has not accepted yet.
    public var bufferedByteCount: Int {
        state.withLock { $0.enqueuedTotal - $0.sentTotal }
    }

    /// The most bytes `enqueue` may leave waiting (default 4 MiB). `write` ignores it: a
    /// writer waits for its own bytes, so memory past the limit is held only by suspended
    /// writers, each for one call.
    public var sendBufferLimit: Int {
        get { state.withLock { $0.sendBufferLimit } }
        set { state.withLock { $0.sendBufferLimit = max(1, newValue) } }
    }

    /// Faults to inject on this connection's sending side; `.none` (the default) turns them off.
    public var faultInjection: FaultInjection {
        get { state.withLock { $0.faults } }
        set { state.withLock { $0.faults = newValue } }
    }

    /// How many reads are parked waiting for bytes (lets tests wait for "the read is pending").
    var waitingReaderCount: Int {
        state.withLock { $0.readers.count }
    }

    /// How many writes are parked waiting for the kernel to take their bytes.
    var waitingWriterCount: Int {
        state.withLock { $0.writeWaiters.count }
    }

    /// Closes the connection: pending reads, writes and connects fail with `.closed`; bytes not
    /// yet accepted by the kernel are discarded (`flush()` first to deliver them). Idempotent.
    public func close() {
        state.withLock { state in
            var wakeups = Wakeups()
            closeLocked(&state, reason: .closed, wakeups: &wakeups)
            return wakeups
        }.run()
    }

    /// Marks the connection closed with `reason`, releases the descriptor and fails every
    /// waiter with `error` (the reason itself unless the caller has a better one).
    func closeLocked(
        _ state: inout State, reason: TransportError, error: TransportError? = nil, reset: Bool = false,
        wakeups: inout Wakeups
    ) {
        guard state.closeReason == nil else { return }
        state.closeReason = reason
        let error = error ?? reason
        loop.deregister(registration)
        if reset { Descriptor.setResetOnClose(state.fd) }
        Descriptor.close(state.fd)
        state.fd = -1
        state.interest = []
        if let timer = state.delayTimer { loop.cancel(timer) }
        state.delayTimer = nil
        if let waiter = state.connectWaiter { wakeups.resume(waiter, throwing: error, loop: loop) }
        state.connectWaiter = nil
        for waiter in state.readers.removeAll() { wakeups.resume(waiter, throwing: error, loop: loop) }
        for waiter in state.writeWaiters.removeAll() { wakeups.resume(waiter, throwing: error, loop: loop) }
        state.outgoing = OutgoingQueue()
        state.sentTotal = state.enqueuedTotal
    }

    /// Tells the loop what the connection now waits for: reads while a reader is parked, writes
    /// while bytes are due or a connect is pending. Called after every change of state.
    func updateInterestLocked(_ state: inout State) {
        guard state.closeReason == nil else { return }
        var interest: IOInterest = []
        if !state.readers.isEmpty { interest.insert(.read) }
        if state.isConnecting || state.outgoing.headIsDue(at: .now) { interest.insert(.write) }
        if interest != state.interest {
            state.interest = interest
            loop.setInterest(registration, interest)
        }
    }
}

extension TCPConnection: IOEventHandler {
    func handleIO(_ ready: IOInterest) {
        state.withLock { state in
            var wakeups = Wakeups()
            guard state.closeReason == nil else { return wakeups }
            if state.isConnecting {
                if ready.contains(.write) { finishConnectLocked(&state, wakeups: &wakeups) }
            } else {
                if ready.contains(.read) { serveReadersLocked(&state, wakeups: &wakeups) }
                if ready.contains(.write) { flushLocked(&state, wakeups: &wakeups) }
            }
            updateInterestLocked(&state)
            return wakeups
        }.run()
    }
}

extension TCPConnection: CustomStringConvertible {
    public var description: String { "TCPConnection(\(localAddress) → \(remoteAddress))" }
}
