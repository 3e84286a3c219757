import Sodium

/// The 32-byte network identifier `N` of the secret handshake: nodes with different keys never talk.
///
/// Every hello of the handshake is authenticated with `N` (`crypto_auth`), so a node of another
/// deployment fails at the very first message and the listener sends nothing back. The SHS spec:
/// "Changing the key allows separate networks to be created, for example private networks or
/// testnets."
///
/// Derivation (docs/DESIGN.md §4.2):
///
///     without a secret:  N = BLAKE2b-256("parley/net/v1")
///     with a secret s:   N = BLAKE2b-256("parley/net/v1", key: BLAKE2b-256(s))
///
/// The secret is hashed first because BLAKE2b keys are limited to 64 bytes, and a secret file may
/// hold anything. Its bytes are used verbatim: a trailing newline is part of the secret, and an
/// empty secret is a deployment of its own, distinct from "no secret". A human passphrase SHOULD
/// be stretched (`PasswordHash`) by the caller before it gets here.
public struct NetworkKey: Sendable, Equatable, CustomStringConvertible {
    /// The label hashed into every Parley network key; bump it to split protocol generations.
    public static let label = "parley/net/v1"

    /// Number of bytes in a network key.
    public static let byteCount = 32

    /// The 32 key bytes (the HMAC key of the handshake hellos).
    public let bytes: [UInt8]

    /// The network key of a deployment: the public default when `deploymentSecret` is nil.
    public init(deploymentSecret: [UInt8]?) {
        let label = Array(Self.label.utf8)
        if let secret = deploymentSecret {
            bytes = GenericHash.hash(label, key: GenericHash.hash(secret))
        } else {
            bytes = GenericHash.hash(label)
        }
    }

    /// A raw 32-byte key, for interoperability tests with other SHS networks; nil for any other length.
    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = bytes
    }

    /// Redacted: with a deployment secret the key is itself a secret.
    public var description: String { "NetworkKey(redacted)" }
}
