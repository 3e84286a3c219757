import Glibc

extension TCPConnection {
    /// Sends `bytes`; returns once the kernel has accepted all of them (and all written before).
    ///
    /// A slow peer makes the writer wait: the bytes stay in the caller's array, never copied,
    /// so memory stays bounded by the writers themselves. Writes are queued in call order and
    /// never interleave; the call starts on the caller's executor (`nonisolated(nonsending)`),
    /// so an actor's writes keep the order in which it made them. A write cannot be withdrawn
    /// once queued, so task cancellation does not stop it; at `deadline` it throws `.timedOut`
    /// and closes the connection (the stream would be cut mid-message). After a send error
    /// (`.connectionReset`), later writes throw it too, while reads still drain what arrived.
    public nonisolated(nonsending) func write(_ bytes: [UInt8], deadline: ContinuousClock.Instant? = nil) async throws {
        try await waitUntilSent(appending: bytes, deadline: deadline, operation: "write to")
    }

    /// Waits until the kernel has accepted every byte queued so far (by `enqueue` or `write`).
    public nonisolated(nonsending) func flush(deadline: ContinuousClock.Instant? = nil) async throws {
        try await waitUntilSent(appending: [], deadline: deadline, operation: "flush to")
    }

    /// Queues `bytes` without waiting; they go out in order as the peer takes them.
    ///
    /// Throws `.sendBufferFull` when the bytes already waiting plus these exceed
    /// `sendBufferLimit` (a single call larger than the limit is accepted into an empty buffer):
    /// the peer is too slow, and the caller decides — drop ephemeral data, or close the link.
    public func enqueue(_ bytes: [UInt8]) throws(TransportError) {
        try state.withLock { (state) throws(TransportError) -> Wakeups in
            var wakeups = Wakeups()
            if let refusal = writeRefusal(state) { throw refusal }
            let buffered = state.enqueuedTotal - state.sentTotal
            if buffered > 0, buffered + bytes.count > state.sendBufferLimit {
                throw .sendBufferFull(limit: state.sendBufferLimit)
            }
            appendLocked(&state, bytes)
            flushLocked(&state, wakeups: &wakeups)
            updateInterestLocked(&state)
            return wakeups
        }.run()
    }

    /// Half-closes: once the queued bytes are sent, the peer reads end of stream; this side can
    /// still read. Later writes throw `.closed`.
    public func shutdownWrite() {
        state.withLock { state in
            guard state.closeReason == nil, state.writeShutdown == .open else { return }
            state.writeShutdown = .requested
            if state.outgoing.isEmpty { shutdownNowLocked(&state) }
        }
    }

    private nonisolated(nonsending) func waitUntilSent(
        appending bytes: [UInt8], deadline: ContinuousClock.Instant?, operation: String
    ) async throws {
        let id = makeWaiterID()
        #if DEBUG
            try await withCheckedThrowingContinuation { continuation in resolveOrPark(continuation) }
        #else
            try await withUnsafeThrowingContinuation { continuation in resolveOrPark(continuation) }
        #endif
        func resolveOrPark(_ continuation: WaiterContinuation<Void>) {
            state.withLock { state in
                var wakeups = Wakeups()
                if let refusal = writeRefusal(state) {
                    wakeups.resume(continuation, with: .failure(refusal))
                    return wakeups
                }
                appendLocked(&state, bytes)
                let target = state.enqueuedTotal
                flushLocked(&state, wakeups: &wakeups)
                if let refusal = writeRefusal(state) {
                    wakeups.resume(continuation, with: .failure(refusal))  // failed while flushing
                } else if state.sentTotal >= target {
                    wakeups.resume(continuation, with: .success(()))
                } else {
                    var waiter = Waiter(id: id, payload: target, continuation: continuation)
                    if let deadline {
                        let error = TransportError.timedOut(operation: "\(operation) \(remoteAddress)")
                        waiter.timer = loop.schedule(at: deadline) { [weak self] in
                            self?.expireWriter(id, error: error)
                        }
                    }
                    state.writeWaiters.append(waiter)
                }
                updateInterestLocked(&state)
                return wakeups
            }.run()
        }
    }

    /// Why a write cannot start now, if it cannot.
    private func writeRefusal(_ state: State) -> TransportError? {
        if let reason = state.closeReason { return reason }
        if let failure = state.writeFailure { return failure }
        return state.writeShutdown == .open ? nil : .closed
    }

    private func appendLocked(_ state: inout State, _ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        let delay = state.faults.writeDelay
        state.outgoing.append(bytes, notBefore: delay > .zero ? .now + delay : nil)
        state.enqueuedTotal += bytes.count
    }

    /// Sends queued bytes until the kernel's buffer is full or the queue is empty, then resumes
    /// the writers whose bytes are all out.
    func flushLocked(_ state: inout State, wakeups: inout Wakeups) {
        guard state.closeReason == nil, state.writeFailure == nil, !state.isConnecting else { return }
        let now = ContinuousClock.now
        while let chunk = state.outgoing.head {
            if let notBefore = chunk.notBefore, notBefore > now {
                scheduleDelayedFlushLocked(&state, at: notBefore)
                break
            }
            let allowed = state.faults.allowance(wanted: chunk.bytes.count - chunk.offset, sent: state.sentTotal)
            guard allowed > 0 else {  // FaultInjection.dropAfterBytes is reached
                injectDropLocked(&state, wakeups: &wakeups)
                return
            }
            let fd = state.fd
            let sent = chunk.bytes.withUnsafeBytes {
                send(fd, $0.baseAddress! + chunk.offset, allowed, Int32(MSG_NOSIGNAL))
            }
            if sent > 0 {
                state.outgoing.advanceHead(by: sent)
                state.sentTotal += sent
                continue
            }
            let code = errno
            if code == EINTR { continue }
            if Descriptor.wouldBlock(code) { break }
            failWritesLocked(
                &state, TransportError.fromErrno(code, call: "send", address: remoteAddress), wakeups: &wakeups)
            return
        }
        while let waiter = state.writeWaiters.first, waiter.payload <= state.sentTotal {
            wakeups.resume(state.writeWaiters.popFirst()!, returning: (), loop: loop)
        }
        if state.outgoing.isEmpty, state.writeShutdown == .requested { shutdownNowLocked(&state) }
    }

    /// The sending side is broken: fail the writers and discard the queue, but keep the
    /// connection open so that reads can drain what the peer sent before it went away.
    private func failWritesLocked(_ state: inout State, _ error: TransportError, wakeups: inout Wakeups) {
        state.writeFailure = error
        for waiter in state.writeWaiters.removeAll() { wakeups.resume(waiter, throwing: error, loop: loop) }
        state.outgoing = OutgoingQueue()
        state.sentTotal = state.enqueuedTotal
    }

    private func shutdownNowLocked(_ state: inout State) {
        _ = shutdown(state.fd, Int32(SHUT_WR))  // ENOTCONN after a reset is harmless
        state.writeShutdown = .done
    }

    /// A write or flush missed its deadline: fail it, and close the connection.
    private func expireWriter(_ id: UInt64, error: TransportError) {
        state.withLock { state in
            var wakeups = Wakeups()
            if let waiter = state.writeWaiters.remove(id: id) {
                wakeups.resume(waiter, throwing: error, loop: loop)
                closeLocked(&state, reason: error, wakeups: &wakeups)
            }
            return wakeups
        }.run()
    }
}

/// The bytes waiting to be sent: the callers' arrays, referenced rather than copied.
struct OutgoingQueue {
    struct Chunk {
        let bytes: [UInt8]
        var offset = 0
        /// Held back until then by `FaultInjection.writeDelay`.
        let notBefore: ContinuousClock.Instant?
    }

    private var chunks: [Chunk] = []
    private var start = 0

    var isEmpty: Bool { start == chunks.count }
    var head: Chunk? { isEmpty ? nil : chunks[start] }

    func headIsDue(at now: ContinuousClock.Instant) -> Bool {
        guard let head else { return false }
        return head.notBefore.map { $0 <= now } ?? true
    }

    mutating func append(_ bytes: [UInt8], notBefore: ContinuousClock.Instant?) {
        chunks.append(Chunk(bytes: bytes, notBefore: notBefore))
    }

    mutating func advanceHead(by count: Int) {
        chunks[start].offset += count
        guard chunks[start].offset == chunks[start].bytes.count else { return }
        chunks[start] = Chunk(bytes: [], notBefore: nil)  // release the caller's array now
        start += 1
        if start == chunks.count {
            chunks.removeAll(keepingCapacity: true)
            start = 0
        } else if start >= 64, start * 2 >= chunks.count {
            chunks.removeFirst(start)
            start = 0
        }
    }
}
