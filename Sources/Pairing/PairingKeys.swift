import Sodium
import Wire

/// The PAKE of pairing (docs/DESIGN.md §4.4): CPace over ristretto255, then two AEAD keys.
///
/// Both sides map the code and the session id to a generator `G` nobody knows a logarithm of,
/// send `Y = x·G` for a fresh secret scalar `x`, and hash `K = x·Y'` with the transcript into the
/// intermediate session key. A guesser learns one yes/no per connection and nothing it could
/// test offline: with the wrong code its `K` is unrelated to the host's.
enum PairingPAKE {
    /// Domain label of the generator hash and the key schedule.
    static let domain: [UInt8] = Array("parley/pair/v1".utf8)
    static let sessionIDBytes = 16

    /// `G = ristretto255_from_hash(BLAKE2b-512_{key "parley/pair/v1"}(len(code) ‖ code ‖ sid))`.
    static func generator(code: PairingCode, sessionID: [UInt8]) -> [UInt8] {
        let password = code.passwordBytes
        let hash = GenericHash.hash([UInt8(password.count)] + password + sessionID, key: domain, outputBytes: Ristretto255.hashBytes)
        return Ristretto255.hashToGroup(hash)
    }

    /// One side's secret scalar and public share.
    struct Share {
        let scalar: SecureBytes
        let publicShare: [UInt8]

        init(generator: [UInt8]) {
            scalar = Ristretto255.randomScalar()
            // A from_hash output is a valid point and a random scalar is non-zero: cannot throw.
            publicShare = try! Ristretto255.scalarMult(scalar, generator).bytes
        }
    }

    /// The session's two keys from `K = scalar · peerShare`. Throws for a peer share that is not
    /// a valid point or makes `K` the identity.
    static func keys(
        share: Share, peerShare: [UInt8], sessionID: [UInt8], guestShare: [UInt8], hostShare: [UInt8]
    ) throws(SodiumError) -> PairingKeys {
        guard Ristretto255.isValidPoint(peerShare) else { throw .invalidPublicKey }
        let shared = try Ristretto255.scalarMult(share.scalar, peerShare)
        // ISK = BLAKE2b-256_{key "parley/pair/v1/isk"}(K ‖ sid ‖ Ya ‖ Yb)
        let hasher = GenericHash.Hasher(outputBytes: 32, key: domain + Array("/isk".utf8))
        shared.withUnsafeBytes { hasher.update($0) }
        hasher.update(sessionID)
        hasher.update(guestShare)
        hasher.update(hostShare)
        var digest = hasher.finalize()
        let isk = SecureBytes(digest)
        for index in digest.indices { digest[index] = 0 }
        return PairingKeys(
            hostToGuest: KeyDerivation.deriveKey(isk, id: 1, context: "parlpair"),
            guestToHost: KeyDerivation.deriveKey(isk, id: 2, context: "parlpair"))
    }
}

/// The two directions' AEAD keys of one pairing session.
struct PairingKeys {
    let hostToGuest: SecureBytes
    let guestToHost: SecureBytes
}

/// One direction of sealed messages: XChaCha20-Poly1305 with a random nonce, and the direction
/// and the message's number in the additional data, so a message cannot be replayed, reordered,
/// dropped unnoticed or reflected back to its sender.
struct SealedDirection {
    let key: SecureBytes
    let label: UInt8
    private(set) var count: UInt64 = 0

    init(key: SecureBytes, label: UInt8) {
        self.key = key
        self.label = label
    }

    private var additionalData: [UInt8] {
        var writer = ByteWriter(capacity: 32)
        writer.raw(PairingPAKE.domain)
        writer.u8(label)
        writer.u64(count)
        return writer.bytes
    }

    mutating func seal(_ message: [UInt8]) -> [UInt8] {
        defer { count += 1 }
        return try! AEAD.seal(message, additionalData: additionalData, key: key)  // the key is 32 bytes
    }

    mutating func open(_ sealed: [UInt8]) throws(SodiumError) -> [UInt8] {
        let message = try AEAD.open(sealed, additionalData: additionalData, key: key)
        count += 1
        return message
    }
}
