import Sodium
import Wire

/// The identity's key on disk (docs/DESIGN.md §3.1): created on first use with mode 0600, never
/// overwritten, optionally protected by a passphrase.
///
/// Two kinds share one header; integers are big-endian. Plain (kind 0), 89 bytes:
///
/// | offset | size | field                                                        |
/// |-------:|-----:|--------------------------------------------------------------|
/// |      0 |    8 | magic `PRLYKEY1` (ASCII; the last character is the version)  |
/// |      8 |    1 | kind: 0 plain                                                |
/// |      9 |   32 | Ed25519 public key (the user id)                             |
/// |     41 |   32 | Ed25519 seed                                                 |
/// |     73 |   16 | checksum: BLAKE2b-128 of bytes 0..<73                        |
///
/// Passphrase (kind 1), 161 bytes:
///
/// | offset | size | field                                                        |
/// |-------:|-----:|--------------------------------------------------------------|
/// |      0 |    8 | magic `PRLYKEY1`                                             |
/// |      8 |    1 | kind: 1 passphrase                                           |
/// |      9 |   32 | Ed25519 public key (the user id, public anyway)              |
/// |     41 |   16 | Argon2id salt (`crypto_pwhash`)                              |
/// |     57 |    8 | Argon2id operations limit, u64                               |
/// |     65 |    8 | Argon2id memory limit in bytes, u64                          |
/// |     73 |   72 | `AEAD.seal` of the seed: nonce (24) ‖ ciphertext (32) ‖ tag (16), |
/// |        |      | keyed by `PasswordHash.deriveKey`, additional data bytes 0..<73 |
/// |    145 |   16 | checksum: BLAKE2b-128 of bytes 0..<145                       |
///
/// The unkeyed checksum tells a damaged file (`.corrupted`) from a wrong passphrase
/// (`.wrongPassphrase`); loading also checks that the seed gives the stored public key.
/// Loading refuses a file that group or other users may access, a file of another user,
/// and Argon2id limits above 16 passes or 1 GiB (a hostile file must not stall or exhaust
/// the machine).
///
/// Creating writes a temporary file beside the key (exclusively, mode 0600, fsync), then
/// `link`s it to the key's name, which fails rather than replace anything; on file systems
/// without hard links it writes the key's name directly with `O_CREAT | O_EXCL`. A crash leaves
/// either no key file or a whole one (and at worst a stray `.tmp-` file, mode 0600).
public enum KeyFile {
    /// Loads the identity at `path`, or creates a new one there if nothing is at `path`.
    ///
    /// `created` is true only when this call wrote the file. If another process creates the
    /// file first, its identity is loaded. A nil or empty `passphrase` creates a plain file;
    /// `cost` applies only to a new passphrase file (an existing file stores its own).
    public static func loadOrCreate(
        at path: String, passphrase: [UInt8]? = nil, cost: PasswordHash.Cost = .interactive
    ) throws(KeyFileError) -> (identity: Identity, created: Bool) {
        if var contents = try KeyFileIO.readIfPresent(at: path, limit: maximumFileBytes) {
            defer { KeyFileIO.wipe(&contents) }
            return (try decode(contents, passphrase: passphrase, path: path), false)
        }
        let identity = Identity()
        do {
            try create(at: path, passphrase: passphrase, identity: identity, cost: cost)
        } catch {
            guard case .alreadyExists = error else { throw error }
            return (try load(at: path, passphrase: passphrase), false)
        }
        return (identity, true)
    }

    /// Loads the identity stored at `path`. A passphrase given for a plain file is ignored.
    public static func load(at path: String, passphrase: [UInt8]? = nil) throws(KeyFileError) -> Identity {
        guard var contents = try KeyFileIO.readIfPresent(at: path, limit: maximumFileBytes) else {
            throw .unreadable(path: path, reason: KeyFileIO.noSuchFile)
        }
        defer { KeyFileIO.wipe(&contents) }
        return try decode(contents, passphrase: passphrase, path: path)
    }

    /// Writes `identity` to a new key file at `path` (mode 0600), encrypted if `passphrase` is
    /// non-empty. Throws `.alreadyExists` rather than replace anything at `path`.
    public static func create(
        at path: String, passphrase: [UInt8]? = nil, identity: Identity, cost: PasswordHash.Cost = .interactive
    ) throws(KeyFileError) {
        var contents = try encode(identity, passphrase: passphrase, cost: cost, path: path)
        defer { KeyFileIO.wipe(&contents) }
        try KeyFileIO.createWithoutReplacing(at: path, contents: contents)
    }
}

// MARK: - Format

extension KeyFile {
    static let magic: [UInt8] = Array("PRLYKEY1".utf8)
    static let checksumBytes = 16
    /// Far above either kind; a longer file is not a key file and is not read whole.
    static let maximumFileBytes = 4096
    /// Limits accepted from a file (and for a new one): Argon2id's minimum up to 16 passes and 1 GiB.
    static let operationsRange: ClosedRange<UInt64> = 1...16
    static let memoryRange: ClosedRange<UInt64> = 8 << 10...1 << 30

    enum Kind: UInt8 {
        case plain = 0
        case passphrase = 1
    }

    /// The fields of a key file whose checksum and layout are sound (nothing decrypted yet).
    enum Parsed {
        case plain(publicKey: [UInt8], seed: [UInt8])
        case passphrase(publicKey: [UInt8], salt: [UInt8], cost: PasswordHash.Cost, sealedSeed: [UInt8], header: [UInt8])
        case unknownKind
    }

    /// The file bytes for `identity`.
    static func encode(
        _ identity: Identity, passphrase: [UInt8]?, cost: PasswordHash.Cost, path: String
    ) throws(KeyFileError) -> [UInt8] {
        var seed = identity.keyPair.seed.bytes
        defer { KeyFileIO.wipe(&seed) }
        var writer = ByteWriter(capacity: 192)
        writer.raw(magic)
        if let passphrase, !passphrase.isEmpty {
            guard operationsRange.contains(cost.operations), cost.memoryBytes >= 0,
                memoryRange.contains(UInt64(cost.memoryBytes))
            else {
                throw .cannotCreate(path: path, reason: "the passphrase cost is outside the supported range")
            }
            let salt = Sodium.randomBytes(PasswordHash.saltBytes)
            writer.u8(Kind.passphrase.rawValue)
            writer.raw(identity.keyPair.publicKey)
            writer.raw(salt)
            writer.u64(cost.operations)
            writer.u64(UInt64(cost.memoryBytes))
            let header = writer.bytes
            do {
                let key = try PasswordHash.deriveKey(passphrase: passphrase, salt: salt, cost: cost, bytes: AEAD.keyBytes)
                writer.raw(try AEAD.seal(seed, additionalData: header, key: key))
            } catch {
                throw .cannotCreate(path: path, reason: "deriving a key from the passphrase failed (not enough memory?)")
            }
        } else {
            writer.u8(Kind.plain.rawValue)
            writer.raw(identity.keyPair.publicKey)
            writer.raw(seed)
        }
        // Appending in place (within the reserved capacity) leaves no stray copy of the seed.
        writer.raw(GenericHash.hash(writer.bytes, outputBytes: checksumBytes))
        return writer.bytes
    }

    /// The identity in the file bytes `contents`.
    static func decode(_ contents: [UInt8], passphrase: [UInt8]?, path: String) throws(KeyFileError) -> Identity {
        // A key file of a later version (`PRLYKEY2`…`PRLYKEY9`) is told apart before its checksum,
        // whose place may differ.
        if contents.count >= magic.count, contents.starts(with: magic.dropLast()),
            (UInt8(ascii: "2")...UInt8(ascii: "9")).contains(contents[magic.count - 1])
        {
            throw .unsupportedFormat(path: path)
        }
        guard contents.count > checksumBytes else { throw .corrupted(path: path) }
        let body = contents.dropLast(checksumBytes)
        let checksum = body.withUnsafeBytes { GenericHash.hash($0, outputBytes: checksumBytes) }
        guard Sodium.constantTimeEqual(checksum, Array(contents.suffix(checksumBytes))) else {
            throw .corrupted(path: path)
        }

        var parsed: Parsed
        do { parsed = try parse(body) } catch { throw .corrupted(path: path) }

        let publicKey: [UInt8]
        var seed: [UInt8]
        switch parsed {
        case .unknownKind:
            throw .unsupportedFormat(path: path)
        case .plain(let storedKey, let storedSeed):
            publicKey = storedKey
            seed = storedSeed
        case .passphrase(let storedKey, let salt, let cost, let sealedSeed, let header):
            guard let passphrase, !passphrase.isEmpty else { throw .passphraseRequired(path: path) }
            let key: SecureBytes
            do {
                key = try PasswordHash.deriveKey(passphrase: passphrase, salt: salt, cost: cost, bytes: AEAD.keyBytes)
            } catch {
                throw .unreadable(path: path, reason: "deriving a key from the passphrase failed (not enough memory?)")
            }
            do { seed = try AEAD.open(sealedSeed, additionalData: header, key: key) } catch {
                throw .wrongPassphrase(path: path)
            }
            publicKey = storedKey
        }
        // Drop the parsed copy so `seed` holds the only reference and is wiped in place.
        parsed = .unknownKind
        defer { KeyFileIO.wipe(&seed) }

        let identity: Identity
        do { identity = try Identity(seed: seed) } catch { throw .corrupted(path: path) }
        guard identity.keyPair.publicKey == publicKey else { throw .corrupted(path: path) }
        return identity
    }

    /// The fields of `body` (a file without its checksum); throws on any layout error.
    static func parse(_ body: ArraySlice<UInt8>) throws(WireDecodingError) -> Parsed {
        var reader = ByteReader(body)
        guard try reader.raw(magic.count, "magic") == magic else { throw .invalidValue(field: "magic") }
        guard let kind = Kind(rawValue: try reader.u8("kind")) else { return .unknownKind }
        let publicKey = try reader.raw(Signing.publicKeyBytes, "public key")
        switch kind {
        case .plain:
            let seed = try reader.raw(Signing.seedBytes, "seed")
            try reader.expectEnd()
            return .plain(publicKey: publicKey, seed: seed)
        case .passphrase:
            let salt = try reader.raw(PasswordHash.saltBytes, "salt")
            let operations = try reader.u64("operations limit")
            let memory = try reader.u64("memory limit")
            guard operationsRange.contains(operations) else { throw .invalidValue(field: "operations limit") }
            guard memoryRange.contains(memory) else { throw .invalidValue(field: "memory limit") }
            let header = Array(body.prefix(reader.offset - body.startIndex))
            let sealedSeed = try reader.raw(AEAD.nonceBytes + Signing.seedBytes + AEAD.tagBytes, "sealed seed")
            try reader.expectEnd()
            return .passphrase(
                publicKey: publicKey, salt: salt, cost: PasswordHash.Cost(operations: operations, memoryBytes: Int(memory)),
                sealedSeed: sealedSeed, header: header)
        }
    }
}
