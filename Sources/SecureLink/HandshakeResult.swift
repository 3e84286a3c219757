import Identity
import Sodium

/// What a `Handshake` asks its shell to do; the shell performs actions in order.
public enum HandshakeAction: Sendable, Equatable {
    /// Write these bytes to the connection.
    case send([UInt8])
    /// Both identities are proven: start the encrypted framing with these keys.
    case established(HandshakeResult)
    /// Close the connection without writing anything more.
    case fail(HandshakeError)
}

/// Why a handshake failed. Every case means "close the connection, send nothing more".
public enum HandshakeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A hello's HMAC does not verify under our network key: the peer belongs to another
    /// deployment (or the bytes were changed). The server fails here without answering.
    case wrongNetworkKey
    /// A message did not have the exact length this step of the handshake requires.
    case badLength(expected: Int, received: Int)
    /// A public key is unusable: the peer's ephemeral key is a low-order point (the X25519
    /// result would be all zeros), or a long-term key is not a valid Ed25519 point (including
    /// the server key the client was given).
    case weakKey
    /// Server side: message 3 did not open with our keys or its signature is invalid. Either the
    /// client dialed another identity, or it replayed or changed the message.
    case badClientAuth
    /// Client side: message 4 did not open or is not the dialed server's signature. Either the
    /// listener is not the identity we dialed, or the message was replayed or changed.
    case badServerAuth
    /// The handshake did not finish before its deadline (`Handshake.defaultTimeout`).
    case timedOut

    public var description: String {
        switch self {
        case .wrongNetworkKey: "the peer uses another network key (check the deployment secret)"
        case .badLength(let expected, let received): "handshake message of \(received) bytes, expected \(expected)"
        case .weakKey: "the peer sent an invalid or low-order public key"
        case .badClientAuth: "the client's proof of identity did not verify"
        case .badServerAuth: "the server did not prove the identity that was dialed"
        case .timedOut: "the handshake did not finish in time"
        }
    }
}

/// The outcome of a successful handshake: who is on the other end, and one key per direction.
///
/// Keys (Parley's addition; SHS v1 defines only the box-stream keys, which Parley does not use):
///
///     master       = BLAKE2b-256("parley/link/v1" ‖ k4 ‖ msg1 ‖ msg2 ‖ A_pk ‖ B_pk)
///     clientToServer = crypto_kdf(master, id: 1, context: "parleylk")
///     serverToClient = crypto_kdf(master, id: 2, context: "parleylk")
///
/// where `k4 = sha256(N ‖ a·b ‖ a·B ‖ A·b)` is the key of message 4 (so it covers the network key
/// and all three Diffie-Hellman results), msg1/msg2 carry both ephemeral keys, and `A_pk`/`B_pk`
/// are the client's and server's Ed25519 identity keys. Each key seeds one secretstream; the
/// two directions never share a key.
public struct HandshakeResult: Sendable, Equatable {
    /// The proven identity of the peer.
    public let remote: UserID
    /// Key of the stream we push (our `FrameEncoder`).
    public let sendingKey: SecureBytes
    /// Key of the stream we pull (our `FrameDecoder`).
    public let receivingKey: SecureBytes

    public init(remote: UserID, sendingKey: SecureBytes, receivingKey: SecureBytes) {
        self.remote = remote
        self.sendingKey = sendingKey
        self.receivingKey = receivingKey
    }

    static let masterLabel = "parley/link/v1"
    static let kdfContext = "parleylk"

    /// The two direction keys of a finished handshake (see the type's comment).
    static func directionKeys(
        k4: SecureBytes, clientHello: [UInt8], serverHello: [UInt8],
        clientKey: [UInt8], serverKey: [UInt8]
    ) -> (clientToServer: SecureBytes, serverToClient: SecureBytes) {
        let hasher = GenericHash.Hasher(outputBytes: KeyDerivation.masterKeyBytes)
        hasher.update(Array(masterLabel.utf8))
        k4.withUnsafeBytes { hasher.update($0) }
        for part in [clientHello, serverHello, clientKey, serverKey] { hasher.update(part) }
        var digest = hasher.finalize()
        let master = SecureBytes(digest)
        wipe(&digest)
        return (
            KeyDerivation.deriveKey(master, id: 1, context: kdfContext),
            KeyDerivation.deriveKey(master, id: 2, context: kdfContext)
        )
    }
}

/// Overwrites a temporary copy of secret bytes (best effort: `SecureBytes` holds the real keys).
func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) }
}
