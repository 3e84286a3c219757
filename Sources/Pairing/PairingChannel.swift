import Transport
import Wire

/// Length-prefixed frames over one TCP connection, read and written synchronously.
///
/// A frame is a u32 big-endian length and that many bytes. Every read has a deadline and a size
/// limit checked before a byte of the body is read: handshake frames MUST be exactly their size,
/// sealed messages at most `maxSealedFrameBytes`.
///
/// A pairing's socket work runs on the shared event loop's thread (`runBlocking(on:)`), never on
/// the concurrency pool: in a process whose pool threads are all busy or blocked, pool work could
/// wait past the other device's deadlines.
final class PairingChannel: Sendable {
    /// The largest message a closure may hand over: 32 MiB.
    static let maxMessageBytes = 32 << 20
    /// A sealed message's frame: the message, the nonce and the tag.
    static let maxSealedFrameBytes = maxMessageBytes + 40
    /// How long one frame may take to arrive.
    static let frameTimeout: Duration = .seconds(20)

    let connection: TCPConnection

    init(_ connection: TCPConnection) {
        self.connection = connection
    }

    func close() {
        connection.close()
    }

    /// Sends one frame.
    func send(_ payload: [UInt8], deadline: ContinuousClock.Instant) throws(PairingError) {
        var writer = ByteWriter(capacity: payload.count + 4)
        writer.u32(UInt32(payload.count))
        writer.raw(payload)
        let frame = writer.bytes
        let connection = connection
        do {
            try runBlocking(on: EventLoop.shared) { try await connection.write(frame, deadline: deadline) }
        } catch {
            throw Self.failure(error, sending: true)
        }
    }

    /// Receives one frame of exactly `size` bytes (a handshake message).
    func receive(exactly size: Int, deadline: ContinuousClock.Instant) throws(PairingError) -> [UInt8] {
        try receive(limit: size, exact: true, deadline: deadline)
    }

    /// Receives one sealed message's frame.
    func receiveSealed(deadline: ContinuousClock.Instant) throws(PairingError) -> [UInt8] {
        try receive(limit: Self.maxSealedFrameBytes, exact: false, deadline: deadline)
    }

    private func receive(limit: Int, exact: Bool, deadline: ContinuousClock.Instant) throws(PairingError) -> [UInt8] {
        let connection = connection
        let header: [UInt8]
        do {
            header = try runBlocking(on: EventLoop.shared) { try await connection.readExactly(4, deadline: deadline) }
        } catch {
            throw Self.failure(error, sending: false)
        }
        var reader = ByteReader(header)
        let length = Int(try! reader.u32())  // four bytes were read
        if exact, length != limit {
            throw PairingError.broken(
                "the other device sent a \(length)-byte handshake message where \(limit) bytes belong (is it running another version of parley?)")
        }
        guard length <= limit else {
            throw PairingError.broken("the other device sent a \(length)-byte message, over the \(Self.maxMessageBytes >> 20) MiB limit")
        }
        guard length > 0 else { return [] }
        do {
            return try runBlocking(on: EventLoop.shared) { try await connection.readExactly(length, deadline: deadline) }
        } catch {
            throw Self.failure(error, sending: false)
        }
    }

    /// A transport failure as the pairing error a person reads.
    static func failure(_ error: any Error, sending: Bool) -> PairingError {
        switch error as? TransportError {
        case .endOfStream?, .connectionReset?:
            return .broken("the other device closed the connection")
        case .timedOut?:
            return .broken(sending ? "the other device stopped reading" : "the other device sent nothing in time")
        default:
            return .broken("the connection failed (\(error))")
        }
    }
}
