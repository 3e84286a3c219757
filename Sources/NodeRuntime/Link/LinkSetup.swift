import Identity
import SecureLink
import Transport

/// Runs the unauthenticated start of a connection — the secret handshake, or a key probe —
/// by driving the pure `Handshake` over a `TCPConnection`. Every read is exact-length and bounded
/// by one deadline for the whole exchange (docs/DESIGN.md §4.2: handshake 5 s).
enum LinkSetup {
    /// How an accepted connection's start ended well.
    enum Accepted: Sendable {
        case established(HandshakeResult)
        /// It was a key probe, answered; the connection is done.
        case probeAnswered
    }

    /// Dials side: runs the handshake as client, expecting `server`.
    static func handshake(
        asClientOf server: UserID, on connection: TCPConnection, identity: Identity,
        networkKey: NetworkKey, deadline: ContinuousClock.Instant
    ) async throws(LinkSetupError) -> HandshakeResult {
        var handshake = Handshake(role: .client(serverKey: server), identity: identity, networkKey: networkKey, startedAt: 0)
        return try await drive(&handshake, actions: handshake.start(), on: connection, deadline: deadline)
    }

    /// Listening side: reads the first 64 bytes, then runs the handshake as server or answers a
    /// key probe (`KeyProbe`); anything else fails with `.unrecognizedFirstMessage`, unanswered.
    static func accept(
        on connection: TCPConnection, identity: Identity, networkKey: NetworkKey,
        deadline: ContinuousClock.Instant
    ) async throws(LinkSetupError) -> Accepted {
        let first = try await readExactly(KeyProbe.probeByteCount, from: connection, deadline: deadline)
        switch KeyProbe.classify(first, networkKey: networkKey) {
        case .unrecognized:
            throw .unrecognizedFirstMessage
        case .keyProbe:
            let reply = KeyProbe.reply(to: first, identity: identity.id, networkKey: networkKey)
            do {
                try await connection.write(reply, deadline: deadline)
            } catch {
                throw .transport(String(describing: error))
            }
            return .probeAnswered
        case .handshakeHello:
            var handshake = Handshake(role: .server, identity: identity, networkKey: networkKey, startedAt: 0)
            _ = handshake.start()
            let actions = handshake.receive(first)
            return .established(try await drive(&handshake, actions: actions, on: connection, deadline: deadline))
        }
    }

    /// Asks the listener at `endpoint` for its key (a static peer listed without one), on `loop`.
    static func probeKey(
        host: String, port: UInt16, networkKey: NetworkKey, timeout: Duration, loop: EventLoop
    ) async throws(LinkSetupError) -> UserID {
        let deadline = ContinuousClock.now + timeout
        let connection: TCPConnection
        do {
            connection = try await TCPConnection.connect(host: host, port: port, timeout: timeout, loop: loop)
        } catch {
            throw .connect(String(describing: error))
        }
        defer { connection.close() }
        let probe = KeyProbe.makeProbe(networkKey: networkKey)
        do {
            try await connection.write(probe, deadline: deadline)
        } catch {
            throw .transport(String(describing: error))
        }
        let reply = try await readExactly(KeyProbe.replyByteCount, from: connection, deadline: deadline)
        guard let key = KeyProbe.key(fromReply: reply, probe: probe, networkKey: networkKey) else { throw .badProbeReply }
        return key
    }

    // MARK: Driving the state machine

    private static func drive(
        _ handshake: inout Handshake, actions initial: [HandshakeAction], on connection: TCPConnection,
        deadline: ContinuousClock.Instant
    ) async throws(LinkSetupError) -> HandshakeResult {
        var actions = initial
        while true {
            for action in actions {
                switch action {
                case .send(let bytes):
                    do {
                        try await connection.write(bytes, deadline: deadline)
                    } catch {
                        throw .transport(String(describing: error))
                    }
                case .established(let result):
                    return result
                case .fail(let error):
                    throw .handshake(error)
                }
            }
            guard let length = handshake.expectedMessageLength else {
                preconditionFailure("a handshake that neither finished nor failed expects no message")
            }
            actions = handshake.receive(try await readExactly(length, from: connection, deadline: deadline))
        }
    }

    private static func readExactly(
        _ count: Int, from connection: TCPConnection,
        deadline: ContinuousClock.Instant
    ) async throws(LinkSetupError) -> [UInt8] {
        do {
            return try await connection.readExactly(count, deadline: deadline)
        } catch TransportError.endOfStream(_, let received) {
            throw .closedEarly(receivedBytes: received)
        } catch TransportError.timedOut {
            throw .timedOut
        } catch {
            throw .transport(String(describing: error))
        }
    }
}

/// Why a connection did not become a link. The descriptions say what it means for a person
/// (`parley doctor` shows the last one per peer).
enum LinkSetupError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The TCP connection could not be made.
    case connect(String)
    /// The handshake state machine failed (wrong network key, wrong identity, bad proof…).
    case handshake(HandshakeError)
    /// The peer closed the connection in the middle of the exchange.
    case closedEarly(receivedBytes: Int)
    /// The exchange did not finish before its deadline.
    case timedOut
    /// The first 64 bytes were neither a handshake hello nor a key probe under our network key.
    case unrecognizedFirstMessage
    /// A key probe's answer did not authenticate.
    case badProbeReply
    /// A send or receive failed.
    case transport(String)

    var description: String {
        switch self {
        case .connect(let reason): reason
        case .handshake(let error): "handshake failed: \(error)"
        case .closedEarly:
            "the peer closed the connection during the handshake (it may use a different network secret)"
        case .timedOut: "the handshake did not finish in time (the peer may use a different network secret, or be overloaded)"
        case .unrecognizedFirstMessage: "the first bytes were not a handshake under our network key"
        case .badProbeReply: "the key probe's answer did not authenticate (a different network secret?)"
        case .transport(let reason): reason
        }
    }

    /// Whether the failure is the remote side's misbehaviour (counted towards a ban) rather than
    /// a network problem or a peer that simply went away.
    var isViolation: Bool {
        switch self {
        case .unrecognizedFirstMessage, .timedOut, .closedEarly: true
        case .handshake(let error): error != .timedOut
        case .connect, .badProbeReply, .transport: false
        }
    }
}
