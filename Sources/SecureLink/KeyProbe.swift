import Identity
import Sodium

/// The pre-handshake key probe: how a node dials a static peer listed without a key.
///
/// The secret handshake needs the listener's identity key before the first byte (SHS: "the
/// client must already know the server's long-term key"). A peers-file entry without a key
/// therefore starts with a probe on the same TCP port: the listener answers with its key, closes,
/// and the dialer connects again and runs the handshake with that key — which proves it, so a
/// lying listener gains nothing but a failed dial.
///
/// Probe, dialer → listener, 64 bytes:
///
/// | off | len | field                                                              |
/// |----:|----:|--------------------------------------------------------------------|
/// |   0 |  32 | nonce: random bytes                                                |
/// |  32 |  32 | `crypto_auth("parley/probe/v1" ‖ nonce, N)` (HMAC-SHA-512-256)     |
///
/// Reply, listener → dialer, 64 bytes, then the listener closes:
///
/// | off | len | field                                                              |
/// |----:|----:|--------------------------------------------------------------------|
/// |   0 |  32 | the listener's identity key (Ed25519 public key, its user id)      |
/// |  32 |  32 | `crypto_auth("parley/probe-reply/v1" ‖ probe ‖ key, N)`            |
///
/// `N` is the network key of the handshake. Rules:
/// - A probe has the length of an SHS client hello (`hmac(N, a_pk) ‖ a_pk`), and the listener
///   tells them apart by which MAC verifies (`classify`): the hello's over its second half, the
///   probe's over its first half in the probe domain. Anything else is garbage: close, no reply.
/// - A node with another network key gets no answer, as in the handshake.
/// - The reply's MAC covers the whole probe, so a reply cannot be replayed to another probe, and
///   it shows the answer comes from a holder of `N` (not that the key is the listener's own: the
///   handshake that follows proves that).
public enum KeyProbe {
    /// The MAC domain of a probe.
    public static let probeLabel = "parley/probe/v1"
    /// The MAC domain of a reply.
    public static let replyLabel = "parley/probe-reply/v1"
    /// Bytes in a probe (the length of an SHS client hello).
    public static let probeByteCount = 64
    /// Bytes in a reply.
    public static let replyByteCount = 64

    /// What the first 64 bytes on an accepted connection are.
    public enum FirstMessage: Sendable, Equatable {
        /// Message 1 of the secret handshake, under our network key.
        case handshakeHello
        /// A key probe under our network key: reply with `reply(to:identity:networkKey:)`.
        case keyProbe
        /// Neither: another network key, or garbage. Close without a reply.
        case unrecognized
    }

    /// A fresh probe (a new random nonce unless one is given, for tests).
    public static func makeProbe(networkKey: NetworkKey, nonce: [UInt8] = Sodium.randomBytes(32)) -> [UInt8] {
        precondition(nonce.count == 32, "a probe nonce is 32 bytes")
        return nonce + Authenticator.tag(Array(probeLabel.utf8) + nonce, key: networkKey.bytes)
    }

    /// Classifies the first 64 bytes a listener receives.
    public static func classify(_ message: [UInt8], networkKey: NetworkKey) -> FirstMessage {
        guard message.count == probeByteCount else { return .unrecognized }
        let first = Array(message[0..<32]), second = Array(message[32..<64])
        if Authenticator.isValid(first, for: second, key: networkKey.bytes) { return .handshakeHello }
        if Authenticator.isValid(second, for: Array(probeLabel.utf8) + first, key: networkKey.bytes) { return .keyProbe }
        return .unrecognized
    }

    /// The listener's answer to `probe` (which `classify` found to be a probe).
    public static func reply(to probe: [UInt8], identity: UserID, networkKey: NetworkKey) -> [UInt8] {
        let key = identity.publicKey
        return key + Authenticator.tag(Array(replyLabel.utf8) + probe + key, key: networkKey.bytes)
    }

    /// The key a reply names, or nil when it is not a valid reply to `probe` under `networkKey`.
    public static func key(fromReply reply: [UInt8], probe: [UInt8], networkKey: NetworkKey) -> UserID? {
        guard reply.count == replyByteCount else { return nil }
        let key = Array(reply[0..<32]), tag = Array(reply[32..<64])
        guard Authenticator.isValid(tag, for: Array(replyLabel.utf8) + probe + key, key: networkKey.bytes) else { return nil }
        return UserID(publicKey: key)
    }
}
