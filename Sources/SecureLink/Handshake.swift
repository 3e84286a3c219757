import Identity
import Sodium

/// One side of Secure Scuttlebutt's secret handshake (SHS v1), as a pure state machine.
///
/// The shell feeds it messages and ticks and performs the returned actions; it never touches a
/// socket or a clock. Usage: `start()`, then repeatedly read exactly `expectedMessageLength`
/// bytes and pass them to `receive(_:)`, and call `onTick(now:)` at `deadline`, until an action
/// is `.established` or `.fail`. On `.fail` the shell MUST close without writing anything more.
///
/// Wire format, unchanged from SHS v1 (C = client/dialer, S = server/listener):
///
/// | # | dir   | bytes | content                                                              |
/// |---|-------|-------|----------------------------------------------------------------------|
/// | 1 | C → S |    64 | `hmac(N, a_pk)` [32] ‖ `a_pk` [32]                                   |
/// | 2 | S → C |    64 | `hmac(N, b_pk)` [32] ‖ `b_pk` [32]                                   |
/// | 3 | C → S |   112 | `secretbox(0, sha256(N‖ab‖aB), sig_A [64] ‖ A_pk [32])` (+16 MAC)     |
/// | 4 | S → C |    80 | `secretbox(0, sha256(N‖ab‖aB‖Ab), sig_B [64])` (+16 MAC)              |
///
/// with `sig_A = sign_A(N ‖ B_pk ‖ sha256(ab))` and `sig_B = sign_B(N ‖ sig_A ‖ A_pk ‖ sha256(ab))`
/// (see `SHS` for the notation). Rules followed, from the SHS spec and docs/DESIGN.md §4.2.1:
/// - "all reads are exact-length; any failure means close without reply": a message of another
///   length fails with `.badLength`, and no failure produces a `.send`.
/// - The server checks the hello's HMAC before anything else, so a node with another network key
///   gets no answer at all (`.wrongNetworkKey`).
/// - "The client must already know the server's long-term key": it is part of the key of message
///   3 and of what `sig_A` covers, so a listener with another identity cannot open message 3 and a
///   message 4 signed by anyone but the dialed identity fails (`.badServerAuth`).
/// - The server learns the client's identity from message 3 and accepts any valid one; the caller
///   decides afterwards whether to keep the link.
/// - Every Diffie-Hellman result is checked: a low-order key gives an all-zero secret and fails
///   with `.weakKey`.
/// - The whole exchange MUST finish within `timeout` (5 s) of `startedAt`.
public struct Handshake: Sendable {
    /// Which side of the connection this machine plays.
    public enum Role: Sendable, Equatable {
        /// The dialer. SHS requires it to know the listener's identity up front (from its beacon).
        case client(serverKey: UserID)
        /// The listener; it learns the client's identity from message 3.
        case server
    }

    /// Milliseconds a handshake may take (docs/DESIGN.md §7).
    public static let defaultTimeout: UInt64 = 5_000

    public let role: Role
    /// The time (milliseconds, the caller's clock) at which `onTick` fails the handshake.
    public let deadline: UInt64

    private let identity: Identity
    private let networkKey: NetworkKey
    /// Our ephemeral key pair; dropped once the handshake ends, for forward secrecy.
    private var ephemeral: KeyExchange.KeyPair?
    private var state: State = .idle

    /// A handshake for `role`, proving `identity`, on the network `networkKey`.
    ///
    /// - Parameters:
    ///   - now: the current time in milliseconds; the deadline is `now + timeout`.
    ///   - ephemeralKeyPair: a fresh key pair per handshake; injectable only for known-answer tests.
    public init(
        role: Role, identity: Identity, networkKey: NetworkKey, startedAt now: UInt64,
        timeout: UInt64 = defaultTimeout, ephemeralKeyPair: KeyExchange.KeyPair = KeyExchange.KeyPair()
    ) {
        self.role = role
        self.identity = identity
        self.networkKey = networkKey
        self.ephemeral = ephemeralKeyPair
        self.deadline = now + timeout
    }

    /// How many bytes the next call to `receive` needs, or nil when no message is expected
    /// (not started, or finished).
    public var expectedMessageLength: Int? {
        switch state {
        case .clientAwaitingHello, .serverAwaitingHello: SHS.helloLength
        case .serverAwaitingAuth: SHS.clientAuthLength
        case .clientAwaitingAccept: SHS.serverAcceptLength
        case .idle, .established, .failed: nil
        }
    }

    /// Whether the handshake has ended, successfully or not.
    public var isFinished: Bool {
        switch state {
        case .established, .failed: true
        default: false
        }
    }

    /// Begins the handshake: the client sends its hello; the server waits for one.
    public mutating func start() -> [HandshakeAction] {
        guard case .idle = state, let ephemeral else { preconditionFailure("invalid state \(state)") }
        switch role {
        case .server:
            state = .serverAwaitingHello
            return []
        case .client(let serverKey):
            // Converting B here refuses an invalid server key before anything is sent.
            guard let serverCurveKey = try? Signing.curve25519PublicKey(fromEd25519: serverKey.publicKey) else {
                return fail(.weakKey)
            }
            let hello = SHS.hello(ephemeralPublicKey: ephemeral.publicKey, networkKey: networkKey)
            state = .clientAwaitingHello(serverCurveKey: serverCurveKey, clientHello: hello)
            return [.send(hello)]
        }
    }

    /// Handles one complete message from the peer (exactly `expectedMessageLength` bytes).
    public mutating func receive(_ message: [UInt8]) -> [HandshakeAction] {
        if let expected = expectedMessageLength, message.count != expected {
            return fail(.badLength(expected: expected, received: message.count))
        }
        switch state {
        case .serverAwaitingHello:
            return onClientHello(message)
        case .clientAwaitingHello(let serverCurveKey, let clientHello):
            return onServerHello(message, serverCurveKey: serverCurveKey, clientHello: clientHello)
        case .serverAwaitingAuth(let pending):
            return onClientAuth(message, pending)
        case .clientAwaitingAccept(let pending):
            return onServerAccept(message, pending)
        case .idle, .established, .failed:
            preconditionFailure("invalid state \(state)")
        }
    }

    /// Fails the handshake with `.timedOut` once `now` reaches `deadline`; nothing otherwise.
    public mutating func onTick(now: UInt64) -> [HandshakeAction] {
        guard !isFinished, now >= deadline else { return [] }
        return fail(.timedOut)
    }

    // MARK: Message 1 (server receives the client's hello)

    private mutating func onClientHello(_ message: [UInt8]) -> [HandshakeAction] {
        guard let clientEphemeral = SHS.ephemeralKey(ofHello: message, networkKey: networkKey) else {
            return fail(.wrongNetworkKey)  // and no reply: the prober learns nothing
        }
        let b = ephemeralKeyPair
        let ab: SecureBytes, aB: SecureBytes
        do {
            ab = try KeyExchange.sharedSecret(b.secretKey, clientEphemeral)
            aB = try KeyExchange.sharedSecret(identity.boxKeyPair.secretKey, clientEphemeral)
        } catch {
            return fail(.weakKey)
        }
        let serverHello = SHS.hello(ephemeralPublicKey: b.publicKey, networkKey: networkKey)
        state = .serverAwaitingAuth(
            ServerPending(
                ab: ab, aB: aB, clientAuthKey: SHS.clientAuthKey(networkKey, ab: ab, aB: aB),
                hashAB: SHS.hash(ab), clientHello: message, serverHello: serverHello))
        return [.send(serverHello)]
    }

    // MARK: Message 2 (client receives the server's hello, sends its proof)

    private mutating func onServerHello(_ message: [UInt8], serverCurveKey: [UInt8], clientHello: [UInt8]) -> [HandshakeAction] {
        guard case .client(let serverKey) = role else { preconditionFailure("invalid state \(state)") }
        guard let serverEphemeral = SHS.ephemeralKey(ofHello: message, networkKey: networkKey) else {
            return fail(.wrongNetworkKey)
        }
        let a = ephemeralKeyPair
        let ab: SecureBytes, aB: SecureBytes, Ab: SecureBytes
        do {
            ab = try KeyExchange.sharedSecret(a.secretKey, serverEphemeral)
            aB = try KeyExchange.sharedSecret(a.secretKey, serverCurveKey)
            Ab = try KeyExchange.sharedSecret(identity.boxKeyPair.secretKey, serverEphemeral)
        } catch {
            return fail(.weakKey)
        }
        let hashAB = SHS.hash(ab)
        let signatureA = identity.sign(SHS.clientProofPayload(networkKey, serverKey: serverKey.publicKey, hashAB: hashAB))
        let clientAuth = SHS.clientAuth(
            signatureA: signatureA, clientKey: identity.id.publicKey,
            key: SHS.clientAuthKey(networkKey, ab: ab, aB: aB))
        state = .clientAwaitingAccept(
            ClientPending(
                serverAcceptKey: SHS.serverAcceptKey(networkKey, ab: ab, aB: aB, Ab: Ab),
                signatureA: signatureA, hashAB: hashAB, clientHello: clientHello, serverHello: message))
        return [.send(clientAuth)]
    }

    // MARK: Message 3 (server checks the client's proof, sends its own)

    private mutating func onClientAuth(_ message: [UInt8], _ pending: ServerPending) -> [HandshakeAction] {
        guard let proof = try? SecretBox.open(message, nonce: SHS.zeroNonce, key: pending.clientAuthKey) else {
            return fail(.badClientAuth)
        }
        let signatureA = Array(proof[0..<Signing.signatureBytes])
        let clientKey = Array(proof[Signing.signatureBytes...])
        let payload = SHS.clientProofPayload(networkKey, serverKey: identity.id.publicKey, hashAB: pending.hashAB)
        guard Signing.isValidSignature(signatureA, for: payload, publicKey: clientKey),
            let client = UserID(publicKey: clientKey)
        else {
            return fail(.badClientAuth)
        }
        let Ab: SecureBytes
        do {
            let clientCurveKey = try Signing.curve25519PublicKey(fromEd25519: clientKey)
            Ab = try KeyExchange.sharedSecret(ephemeralKeyPair.secretKey, clientCurveKey)
        } catch {
            return fail(.weakKey)
        }
        let acceptKey = SHS.serverAcceptKey(networkKey, ab: pending.ab, aB: pending.aB, Ab: Ab)
        let signatureB = identity.sign(
            SHS.serverProofPayload(
                networkKey, signatureA: signatureA, clientKey: clientKey,
                hashAB: pending.hashAB))
        let keys = HandshakeResult.directionKeys(
            k4: acceptKey, clientHello: pending.clientHello, serverHello: pending.serverHello,
            clientKey: clientKey, serverKey: identity.id.publicKey)
        let result = HandshakeResult(remote: client, sendingKey: keys.serverToClient, receivingKey: keys.clientToServer)
        finish()
        return [.send(SHS.serverAccept(signatureB: signatureB, key: acceptKey)), .established(result)]
    }

    // MARK: Message 4 (client checks the server's proof)

    private mutating func onServerAccept(_ message: [UInt8], _ pending: ClientPending) -> [HandshakeAction] {
        guard case .client(let server) = role else { preconditionFailure("invalid state \(state)") }
        guard let signatureB = try? SecretBox.open(message, nonce: SHS.zeroNonce, key: pending.serverAcceptKey) else {
            return fail(.badServerAuth)
        }
        let payload = SHS.serverProofPayload(
            networkKey, signatureA: pending.signatureA, clientKey: identity.id.publicKey,
            hashAB: pending.hashAB)
        guard Signing.isValidSignature(signatureB, for: payload, publicKey: server.publicKey) else {
            return fail(.badServerAuth)
        }
        let keys = HandshakeResult.directionKeys(
            k4: pending.serverAcceptKey, clientHello: pending.clientHello,
            serverHello: pending.serverHello,
            clientKey: identity.id.publicKey, serverKey: server.publicKey)
        finish()
        return [.established(HandshakeResult(remote: server, sendingKey: keys.clientToServer, receivingKey: keys.serverToClient))]
    }

    // MARK: Endings

    private mutating func fail(_ error: HandshakeError) -> [HandshakeAction] {
        state = .failed(error)
        ephemeral = nil
        return [.fail(error)]
    }

    private mutating func finish() {
        state = .established
        ephemeral = nil
    }

    private var ephemeralKeyPair: KeyExchange.KeyPair {
        guard let ephemeral else { preconditionFailure("ephemeral key used after the handshake ended") }
        return ephemeral
    }
}

extension Handshake {
    /// The named states; the data each needs for the next step travels with it.
    enum State: Sendable, CustomStringConvertible {
        case idle
        case clientAwaitingHello(serverCurveKey: [UInt8], clientHello: [UInt8])
        case clientAwaitingAccept(ClientPending)
        case serverAwaitingHello
        case serverAwaitingAuth(ServerPending)
        case established
        case failed(HandshakeError)

        /// The state's name only: a crash report must not carry handshake secrets.
        var description: String {
            switch self {
            case .idle: "idle"
            case .clientAwaitingHello: "clientAwaitingHello"
            case .clientAwaitingAccept: "clientAwaitingAccept"
            case .serverAwaitingHello: "serverAwaitingHello"
            case .serverAwaitingAuth: "serverAwaitingAuth"
            case .established: "established"
            case .failed(let error): "failed(\(error))"
            }
        }
    }

    /// What the client keeps between sending message 3 and receiving message 4.
    struct ClientPending: Sendable {
        let serverAcceptKey: SecureBytes  // sha256(N ‖ ab ‖ aB ‖ Ab)
        let signatureA: [UInt8]
        let hashAB: [UInt8]
        let clientHello: [UInt8]
        let serverHello: [UInt8]
    }

    /// What the server keeps between sending message 2 and receiving message 3.
    struct ServerPending: Sendable {
        let ab: SecureBytes
        let aB: SecureBytes
        let clientAuthKey: SecureBytes  // sha256(N ‖ ab ‖ aB)
        let hashAB: [UInt8]
        let clientHello: [UInt8]
        let serverHello: [UInt8]
    }
}
