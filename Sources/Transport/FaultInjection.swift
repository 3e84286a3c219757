/// Faults a connection injects into its own sending side, for tests and `parley lab`.
///
/// The machines the project runs on have no `netem` (NETWORK-TESTS.md), so latency and broken
/// links are made here. Off by default (`.none`); set `TCPConnection.faultInjection` at any time,
/// and the change applies to bytes written after it. Only the sending side is affected: to
/// disturb both directions, configure both ends.
public struct FaultInjection: Sendable, Hashable {
    /// How long each write's bytes are held back before they go to the kernel, measured from the
    /// write call: a one-way latency. Order is kept, so a write never overtakes an earlier one.
    public var writeDelay: Duration
    /// After this many bytes in total have been sent on the connection, the connection is reset
    /// (RST) as if the link broke mid-stream: the peer gets exactly this many bytes, then an
    /// error or end of stream; pending local operations fail with `.connectionReset`.
    public var dropAfterBytes: Int?

    public init(writeDelay: Duration = .zero, dropAfterBytes: Int? = nil) {
        self.writeDelay = writeDelay
        self.dropAfterBytes = dropAfterBytes
    }

    /// No faults.
    public static let none = FaultInjection()

    /// True when any fault is configured.
    public var isActive: Bool { writeDelay > .zero || dropAfterBytes != nil }

    /// How many of `wanted` bytes may still be sent when `sent` were sent before; zero means
    /// the drop is due now.
    func allowance(wanted: Int, sent: Int) -> Int {
        guard let limit = dropAfterBytes else { return wanted }
        return min(wanted, max(0, limit - sent))
    }
}

extension TCPConnection {
    /// Arms the one timer that flushes when the held-back head of the queue is due.
    func scheduleDelayedFlushLocked(_ state: inout State, at instant: ContinuousClock.Instant) {
        guard state.delayTimer == nil else { return }
        state.delayTimer = loop.schedule(at: instant) { [weak self] in self?.delayedFlush() }
    }

    private func delayedFlush() {
        state.withLock { state in
            var wakeups = Wakeups()
            state.delayTimer = nil
            flushLocked(&state, wakeups: &wakeups)
            updateInterestLocked(&state)
            return wakeups
        }.run()
    }

    /// Breaks the link as `FaultInjection.dropAfterBytes` asks: a reset, as when a cable is pulled
    /// and the peer's kernel answers the next segment with RST.
    func injectDropLocked(_ state: inout State, wakeups: inout Wakeups) {
        let reset = TransportError.connectionReset(peer: remoteAddress.description)
        closeLocked(&state, reason: reset, reset: true, wakeups: &wakeups)
    }
}
