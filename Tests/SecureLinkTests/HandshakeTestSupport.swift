import Identity
import SecureLink
import Sodium
import Testing
import Wire

/// The public Parley network key (no deployment secret).
let parleyNet = NetworkKey(deploymentSecret: nil)

/// Everything observable of one handshake driven in memory.
struct Transcript {
    /// Messages in the order they were sent (1: client hello, 2: server hello, 3, 4).
    var messages: [[UInt8]] = []
    var clientResult: HandshakeResult?
    var serverResult: HandshakeResult?
    var clientFailure: HandshakeError?
    var serverFailure: HandshakeError?
    /// Messages each side sent after it failed (SHS: MUST stay empty).
    var sentAfterFailure: [[UInt8]] = []
}

enum Side { case client, server }

/// Drives `client` and `server` against each other until neither has anything to send.
/// `intercept` sees each message (1-based number, bytes) on the wire and may change it.
@discardableResult
func runHandshake(
    client: inout Handshake, server: inout Handshake,
    intercept: (Int, [UInt8]) -> [UInt8] = { $1 }
) -> Transcript {
    var transcript = Transcript()
    var toServer: [[UInt8]] = []
    var toClient: [[UInt8]] = []

    func apply(_ actions: [HandshakeAction], from side: Side) {
        for action in actions {
            switch action {
            case .send(let bytes):
                let failed = side == .client ? transcript.clientFailure != nil : transcript.serverFailure != nil
                if failed { transcript.sentAfterFailure.append(bytes) }
                let onWire = intercept(transcript.messages.count + 1, bytes)
                transcript.messages.append(onWire)
                if side == .client { toServer.append(onWire) } else { toClient.append(onWire) }
            case .established(let result):
                if side == .client { transcript.clientResult = result } else { transcript.serverResult = result }
            case .fail(let error):
                if side == .client { transcript.clientFailure = error } else { transcript.serverFailure = error }
            }
        }
    }

    apply(server.start(), from: .server)
    apply(client.start(), from: .client)
    while !toServer.isEmpty || !toClient.isEmpty {
        if !toServer.isEmpty { apply(server.receive(toServer.removeFirst()), from: .server) }
        if !toClient.isEmpty { apply(client.receive(toClient.removeFirst()), from: .client) }
    }
    return transcript
}

/// A client of `identity` dialing `server` on `network`, started at `now`.
func makeClient(
    _ identity: Identity, dialing server: UserID, network: NetworkKey = parleyNet, now: UInt64 = 0,
    ephemeral: KeyExchange.KeyPair = KeyExchange.KeyPair()
) -> Handshake {
    Handshake(
        role: .client(serverKey: server), identity: identity, networkKey: network, startedAt: now,
        ephemeralKeyPair: ephemeral)
}

/// A server of `identity` on `network`, started at `now`.
func makeServer(
    _ identity: Identity, network: NetworkKey = parleyNet, now: UInt64 = 0,
    ephemeral: KeyExchange.KeyPair = KeyExchange.KeyPair()
) -> Handshake {
    Handshake(role: .server, identity: identity, networkKey: network, startedAt: now, ephemeralKeyPair: ephemeral)
}

/// The bytes of the single `.send` in `actions`; fails the test at the caller otherwise.
func sentBytes(_ actions: [HandshakeAction], sourceLocation: SourceLocation = #_sourceLocation) throws -> [UInt8] {
    let sends = actions.compactMap { action -> [UInt8]? in
        if case .send(let bytes) = action { return bytes } else { return nil }
    }
    return try #require(sends.count == 1 ? sends.first : nil, "expected one .send in \(actions)", sourceLocation: sourceLocation)
}

/// A hello (message 1 or 2) for an arbitrary 32-byte key, with a correct HMAC under `network`.
func hello(carrying key: [UInt8], network: NetworkKey = parleyNet) -> [UInt8] {
    Authenticator.tag(key, key: network.bytes) + key
}

/// `bytes` with bit `bit` of byte `index` flipped.
func flipping(_ bytes: [UInt8], byte index: Int, bit: Int = 0) -> [UInt8] {
    var copy = bytes
    copy[index] ^= UInt8(1 << bit)
    return copy
}

/// X25519 points of small order (all give an all-zero shared secret); from the list in
/// libsodium's `has_small_order` and the curve25519 literature.
let lowOrderPoints: [[UInt8]] = [
    [UInt8](repeating: 0, count: 32),  // 0
    [1] + [UInt8](repeating: 0, count: 31),  // 1
    Sodium.bytes(hex: "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800")!,  // order 8
    Sodium.bytes(hex: "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157")!,  // order 8
]
