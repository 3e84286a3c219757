import Sodium
import Wire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The key the store (`parley.db`) is encrypted under, on disk beside it as `store.key`
/// (docs/DESIGN.md §5.1): 32 random bytes, sealed under a key derived from the identity's seed,
/// so whoever can open `identity.key` can open the store and nobody else. A protected identity
/// (passphrase) therefore protects the store with the same Argon2id unlock; an unprotected one
/// leaves the store key as readable as its seed. Created once with mode 0600 (like the key file,
/// replaced only when a device key takes over from the person key, `DeviceKeyHandover`); destroying it (`destroy`) makes the store unreadable at once, whatever its size.
///
/// Layout, 129 bytes:
///
/// | offset | size | field                                                                  |
/// |-------:|-----:|------------------------------------------------------------------------|
/// |      0 |    8 | magic `PRLYSTK1`                                                       |
/// |      8 |    1 | kind: 1 sealed under the identity                                      |
/// |      9 |   32 | the identity's public key (whose seed seals it)                        |
/// |     41 |   72 | `AEAD.seal` of the key: nonce ‖ ciphertext ‖ tag, keyed by             |
/// |        |      | `KeyDerivation.deriveKey(seed, id: 1, context: "parlstor")`, additional data bytes 0..<41 |
/// |    113 |   16 | checksum: BLAKE2b-128 of bytes 0..<113                                 |
public enum StoreKeyFile {
    public static let keyBytes = 32
    static let magic: [UInt8] = Array("PRLYSTK1".utf8)
    static let sealedKind: UInt8 = 1
    static let fileBytes = 129

    /// The store key in `path`, created (random, sealed under `identity`) if nothing is there.
    public static func loadOrCreate(at path: String, identity: Identity) throws(KeyFileError) -> SecureBytes {
        if let key = try loadIfPresent(at: path, identity: identity) { return key }
        let key = SecureBytes.random(keyBytes)
        var contents = encode(key, identity: identity)
        defer { KeyFileIO.wipe(&contents) }
        do {
            try KeyFileIO.createWithoutReplacing(at: path, contents: contents)
        } catch {
            guard case .alreadyExists = error else { throw error }
            return try load(at: path, identity: identity)
        }
        return key
    }

    /// The store key in `path`; throws when there is none.
    public static func load(at path: String, identity: Identity) throws(KeyFileError) -> SecureBytes {
        guard let key = try loadIfPresent(at: path, identity: identity) else {
            throw .unreadable(path: path, reason: KeyFileIO.noSuchFile)
        }
        return key
    }

    /// The store key in `path`, or nil when no file is there.
    ///
    /// A file sealed to another key while a copy sealed to `identity` waits beside it (a device
    /// key handover that stopped between its two renames, `DeviceKeyHandover`) is finished here.
    public static func loadIfPresent(at path: String, identity: Identity) throws(KeyFileError) -> SecureBytes? {
        guard var contents = try KeyFileIO.readIfPresent(at: path, limit: KeyFile.maximumFileBytes) else { return nil }
        defer { KeyFileIO.wipe(&contents) }
        do {
            return try decode(contents, identity: identity, path: path)
        } catch {
            let waiting = path + DeviceKeyHandover.waitingSuffix
            guard case .otherIdentity = error, var next = try KeyFileIO.readIfPresent(at: waiting, limit: KeyFile.maximumFileBytes) else {
                throw error
            }
            defer { KeyFileIO.wipe(&next) }
            let key = try decode(next, identity: identity, path: waiting)
            try KeyFileIO.rename(waiting, over: path)
            return key
        }
    }

    /// The store key of the data directory `directory` (its `identity.key` opened with
    /// `passphrase`, then its `store.key`); nil when the directory has no store key (a store
    /// not yet encrypted). For readers of a node's store beside it: tests, the lab, benchmarks.
    public static func load(dataDirectory directory: String, passphrase: [UInt8]? = nil) throws(KeyFileError) -> SecureBytes? {
        let identity = try KeyFile.load(at: directory + "/identity.key", passphrase: passphrase)
        return try loadIfPresent(at: directory + "/store.key", identity: identity)
    }

    static func sealingKey(_ identity: Identity) -> SecureBytes {
        KeyDerivation.deriveKey(identity.keyPair.seed, id: 1, context: "parlstor")
    }

    static func encode(_ key: SecureBytes, identity: Identity) -> [UInt8] {
        var writer = ByteWriter(capacity: fileBytes)
        writer.raw(magic)
        writer.u8(sealedKind)
        writer.raw(identity.keyPair.publicKey)
        let header = writer.bytes
        var plain = key.bytes
        defer { KeyFileIO.wipe(&plain) }
        // Sealing with a 32-byte key cannot fail.
        writer.raw((try? AEAD.seal(plain, additionalData: header, key: sealingKey(identity))) ?? [])
        writer.raw(GenericHash.hash(writer.bytes, outputBytes: KeyFile.checksumBytes))
        return writer.bytes
    }

    static func decode(_ contents: [UInt8], identity: Identity, path: String) throws(KeyFileError) -> SecureBytes {
        guard contents.count == fileBytes, contents.starts(with: magic) else {
            if contents.count >= magic.count, contents.starts(with: magic.dropLast()) { throw .unsupportedFormat(path: path) }
            throw .corrupted(path: path)
        }
        let body = Array(contents.dropLast(KeyFile.checksumBytes))
        guard Sodium.constantTimeEqual(GenericHash.hash(body, outputBytes: KeyFile.checksumBytes), Array(contents.suffix(KeyFile.checksumBytes))) else {
            throw .corrupted(path: path)
        }
        guard body[8] == sealedKind else { throw .unsupportedFormat(path: path) }
        guard Array(body[9..<41]) == identity.keyPair.publicKey else { throw .otherIdentity(path: path) }
        guard var plain = try? AEAD.open(Array(body[41...]), additionalData: Array(body[0..<41]), key: sealingKey(identity)),
            plain.count == keyBytes
        else { throw .corrupted(path: path) }
        defer { KeyFileIO.wipe(&plain) }
        return SecureBytes(plain)
    }

    /// Makes the file at `path` unreadable for good: overwrites it in place with random bytes,
    /// syncs that to the disk, then removes it. Returns whether a file was there. Best effort
    /// against the disk itself: a flash drive may keep the old block elsewhere (SECURITY.md).
    @discardableResult
    public static func destroy(at path: String) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0 else { return false }
        if info.st_mode & S_IFMT == S_IFREG {
            let fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
            if fd >= 0 {
                let noise = Sodium.randomBytes(max(Int(info.st_size), 1))
                _ = noise.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
                _ = fsync(fd)
                close(fd)
            }
        }
        unlink(path)
        KeyFileIO.syncDirectory(containing: path)
        return true
    }
}
