import Sodium

/// Decrypts the incoming direction of a link, incrementally: bytes in, frames out.
///
/// The layout is documented on `FrameEncoder`. Feed bytes as they arrive, in pieces of any size,
/// then call `next()` until it returns nil (more bytes needed). A length over the limit is
/// refused from its 4 bytes alone, and nothing is allocated from an announced length, so memory
/// stays bounded by one frame plus the last piece fed, provided the shell drains `next()` after
/// each `feed`. The first error is final: `next()` throws it again on every later call.
///
/// Non-copyable for the same reason as `FrameEncoder`; one owner, not thread-safe.
public struct FrameDecoder: ~Copyable {
    /// A unit (the header, or a frame) of which some but not all bytes have arrived.
    public struct PendingFrame: Sendable, Equatable {
        /// 0 for the 24-byte header, n for the n-th frame.
        public let index: UInt64
        /// Bytes of it received so far.
        public let bufferedBytes: Int
    }

    private enum Phase {
        case awaitingHeader(key: SecureBytes)
        case open(SecretStream.Puller)
        case closed  // after the peer's goodbye
        case failed(FrameError)
    }

    public let configuration: FrameConfiguration
    private var phase: Phase
    private var buffer: [UInt8] = []
    private var readIndex = 0
    private var unitsDecoded: UInt64 = 0
    private var bytesAfterGoodbye = false

    /// A decoder for the stream keyed by `key` (32 bytes); its header arrives as the first bytes.
    public init(key: SecureBytes, configuration: FrameConfiguration = FrameConfiguration()) {
        precondition(key.count == SecretStream.keyBytes, "secretstream key must be \(SecretStream.keyBytes) bytes")
        phase = .awaitingHeader(key: key)
        self.configuration = configuration
    }

    /// The decoder of the peer's direction of a link (our `receivingKey`).
    public init(for result: HandshakeResult, configuration: FrameConfiguration = FrameConfiguration()) {
        self.init(key: result.receivingKey, configuration: configuration)
    }

    /// The unit partly received, if any: input for `FrameStallDetector`.
    public var pendingFrame: PendingFrame? {
        switch phase {
        case .closed, .failed: nil
        case .awaitingHeader, .open: available > 0 ? PendingFrame(index: unitsDecoded, bufferedBytes: available) : nil
        }
    }

    /// Appends received bytes. After the peer's goodbye they are dropped, and `next()` reports them.
    public mutating func feed(_ bytes: some Collection<UInt8>) {
        switch phase {
        case .failed:
            return
        case .closed:
            if !bytes.isEmpty { bytesAfterGoodbye = true }
        case .awaitingHeader, .open:
            compact()
            buffer.append(contentsOf: bytes)
        }
    }

    /// The next frame or goodbye, or nil when more bytes are needed.
    public mutating func next() throws(FrameError) -> FrameEvent? {
        while true {
            switch phase {
            case .failed(let error):
                throw error
            case .closed:
                if bytesAfterGoodbye { throw fail(.afterGoodbye) }
                return nil
            case .awaitingHeader(let key):
                guard available >= FrameFormat.headerBytes else { return nil }
                let header = Array(buffer[readIndex..<readIndex + FrameFormat.headerBytes])
                readIndex += FrameFormat.headerBytes
                guard let puller = try? SecretStream.Puller(key: key, header: header) else {
                    throw fail(.authenticationFailed)  // libsodium 1.0.18 accepts any header; a bad one fails at frame 1
                }
                phase = .open(puller)
                unitsDecoded += 1
            case .open(let puller):
                return try nextFrame(puller)
            }
        }
    }

    private mutating func nextFrame(_ puller: SecretStream.Puller) throws(FrameError) -> FrameEvent? {
        guard available >= FrameFormat.lengthBytes else { return nil }
        let length = buffer[readIndex..<readIndex + FrameFormat.lengthBytes].reduce(0) { $0 << 8 | Int($1) }
        guard length >= FrameFormat.overheadBytes else { throw fail(.tooShort(length: length)) }
        let plaintextLength = length - FrameFormat.overheadBytes
        guard plaintextLength <= configuration.maxPlaintextBytes else {
            throw fail(.tooLarge(length: plaintextLength, limit: configuration.maxPlaintextBytes))
        }
        guard available >= FrameFormat.lengthBytes + length else { return nil }

        let start = readIndex
        let pulled = buffer.withUnsafeBytes { raw in
            Result { () throws(SodiumError) in
                try puller.pull(
                    UnsafeRawBufferPointer(rebasing: raw[start + FrameFormat.lengthBytes..<start + FrameFormat.lengthBytes + length]),
                    additionalData: UnsafeRawBufferPointer(rebasing: raw[start..<start + FrameFormat.lengthBytes]))
            }
        }
        guard case .success(let (plaintext, tag)) = pulled else { throw fail(.authenticationFailed) }
        readIndex += FrameFormat.lengthBytes + length
        unitsDecoded += 1

        switch tag {
        case .message, .rekey:  // after REKEY libsodium has already rekeyed the pull state
            return .frame(plaintext)
        case .final:
            guard plaintext.count <= 1 else { throw fail(.malformedGoodbye(length: plaintext.count)) }
            phase = .closed
            bytesAfterGoodbye = available > 0
            buffer = []
            readIndex = 0
            return .goodbye(reason: plaintext.first)
        }
    }

    private var available: Int { buffer.count - readIndex }

    private mutating func fail(_ error: FrameError) -> FrameError {
        phase = .failed(error)
        buffer = []
        readIndex = 0
        return error
    }

    /// Drops consumed bytes, so the buffer never grows past one partial frame plus one piece.
    private mutating func compact() {
        guard readIndex > 0 else { return }
        if readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 64 << 10)
        } else {
            buffer.removeFirst(readIndex)
        }
        readIndex = 0
    }
}
