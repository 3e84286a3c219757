import Glibc

extension TCPConnection {
    /// The default most bytes one `read` returns.
    public static let defaultReadSize = 64 << 10

    /// The bytes that have arrived, at most `maxBytes`; waits until at least one byte arrives.
    ///
    /// Returns an empty array at end of stream (the peer closed or shut down its writing side),
    /// and again on every later call. Throws `.timedOut` at `deadline`, `.closed` if this side
    /// closes meanwhile, `.connectionReset` if the peer resets, `CancellationError` if the task
    /// is cancelled; none of these consumes bytes.
    public func read(maxBytes: Int = defaultReadSize, deadline: ContinuousClock.Instant? = nil) async throws -> [UInt8] {
        precondition(maxBytes > 0, "read(maxBytes:) needs a positive count")
        let cancel: @Sendable (UInt64) -> Void = { [self] id in withdrawReader(id, error: CancellationError()) }
        return try await suspend(withdraw: cancel) { id, continuation in
            state.withLock { state in
                var wakeups = Wakeups()
                if let reason = state.closeReason {
                    wakeups.resume(continuation, with: .failure(reason))
                } else if state.readers.isEmpty, let result = receiveLocked(&state, maxBytes: maxBytes) {
                    wakeups.resume(continuation, with: result)  // data already there: no wait
                } else if Task.isCancelled {
                    wakeups.resume(continuation, with: .failure(CancellationError()))
                } else {
                    var waiter = Waiter(id: id, payload: maxBytes, continuation: continuation)
                    if let deadline {
                        let error = TransportError.timedOut(operation: "read from \(remoteAddress)")
                        waiter.timer = loop.schedule(at: deadline) { [weak self] in
                            self?.withdrawReader(id, error: error)
                        }
                    }
                    state.readers.append(waiter)
                    updateInterestLocked(&state)
                }
                return wakeups
            }.run()
        }
    }

    /// Exactly `count` bytes, gathered from as many reads as it takes.
    ///
    /// Throws `.endOfStream(expected:received:)` if the peer closes first, `.timedOut` at
    /// `deadline`; bytes gathered before a failure are lost, so treat any error as the end of
    /// the connection (a link's framing is broken by then anyway).
    public func readExactly(_ count: Int, deadline: ContinuousClock.Instant? = nil) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        while bytes.count < count {
            let chunk = try await read(maxBytes: count - bytes.count, deadline: deadline)
            guard !chunk.isEmpty else { throw TransportError.endOfStream(expected: count, received: bytes.count) }
            bytes += chunk
        }
        return bytes
    }

    /// Reads for parked readers, in order, until they are served or the socket has no more.
    func serveReadersLocked(_ state: inout State, wakeups: inout Wakeups) {
        while let reader = state.readers.first, let result = receiveLocked(&state, maxBytes: reader.payload) {
            _ = state.readers.popFirst()
            switch result {
            case .success(let bytes): wakeups.resume(reader, returning: bytes, loop: loop)
            case .failure(let error): wakeups.resume(reader, throwing: error, loop: loop)
            }
        }
    }

    /// One `recv`: the bytes, `[]` at end of stream, an error, or nil when nothing has arrived.
    func receiveLocked(_ state: inout State, maxBytes: Int) -> Result<[UInt8], any Error>? {
        if state.reachedEOF { return .success([]) }
        let fd = state.fd
        if (state.receiveBuffer?.bytes.count ?? 0) < maxBytes { state.receiveBuffer = ReceiveBuffer(capacity: maxBytes) }
        let buffer = state.receiveBuffer!.bytes
        while true {
            let received = recv(fd, buffer.baseAddress, maxBytes, 0)
            if received > 0 {
                // Copied out at its size: the caller keeps no capacity it did not get.
                return .success(Array(UnsafeRawBufferPointer(rebasing: buffer[..<received])))
            }
            if received == 0 {
                state.reachedEOF = true
                return .success([])
            }
            let code = errno
            if code == EINTR { continue }
            if Descriptor.wouldBlock(code) { return nil }
            return .failure(TransportError.fromErrno(code, call: "recv", address: remoteAddress))
        }
    }

    /// Resumes the reader `id` with `error` if it is still parked (deadline or cancellation).
    func withdrawReader(_ id: UInt64, error: any Error) {
        state.withLock { state in
            var wakeups = Wakeups()
            if let reader = state.readers.remove(id: id) {
                wakeups.resume(reader, throwing: error, loop: loop)
                updateInterestLocked(&state)
            }
            return wakeups
        }.run()
    }
}
