import Sodium
import Wire

/// A node's identity: an Ed25519 key pair whose public key is the user id.
///
/// The secret key never leaves this type except as an encrypted or 0600 key file (`KeyFile`).
public struct Identity: Sendable {
    public let keyPair: Signing.KeyPair
    public let id: UserID

    /// A fresh random identity.
    public init() {
        self.init(keyPair: Signing.KeyPair())
    }

    /// The identity with a given key pair (loaded from a key file, or a test fixture).
    public init(keyPair: Signing.KeyPair) {
        self.keyPair = keyPair
        id = UserID(publicKey: keyPair.publicKey)!
    }

    /// The identity whose seed is `seed` (32 bytes): deterministic fixtures and key files.
    public init(seed: [UInt8]) throws(SodiumError) {
        self.init(keyPair: try Signing.KeyPair(seed: seed))
    }

    /// Signs `message` with the identity's key.
    public func sign(_ message: [UInt8]) -> [UInt8] { keyPair.sign(message) }

    /// Signs `message` with the identity's key.
    public func sign(_ message: UnsafeRawBufferPointer) -> [UInt8] { keyPair.sign(message) }

    /// The X25519 key pair converted from the identity key: sealed boxes addressed to this user.
    public var boxKeyPair: KeyExchange.KeyPair {
        KeyExchange.KeyPair(secretKey: Signing.curve25519SecretKey(fromEd25519: keyPair.secretKey))
    }
}
