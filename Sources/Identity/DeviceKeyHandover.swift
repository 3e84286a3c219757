import Sodium

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The key files of a data directory whose person key forked, handed over to a new device key
/// of the same person (docs/DESIGN.md §3.8, "Recovering a forked store").
///
/// Afterwards `identity.key` holds the device key, `person.key` the person key it replaced
/// (same passphrase protection), and `store.key` is sealed to the device. Every step leaves a
/// directory that opens: the person key is copied before anything else changes; the device key
/// and its store key wait beside their files (`identity.key.next`, `store.key.next`) until the
/// store has certified the device; then two renames put them in place, and a store key still
/// sealed to the person key when the device key is already in place is finished by
/// `StoreKeyFile.load`, which takes the waiting `store.key.next`.
public struct DeviceKeyHandover: Sendable {
    public let directory: String

    public init(directory: String) {
        self.directory = directory
    }

    public var identityPath: String { directory + "/identity.key" }
    public var personPath: String { directory + "/person.key" }
    public var storeKeyPath: String { directory + "/store.key" }
    var nextIdentityPath: String { identityPath + Self.waitingSuffix }
    var nextStoreKeyPath: String { storeKeyPath + Self.waitingSuffix }

    /// What a file waiting to replace another is called: the other's name and this.
    static let waitingSuffix = ".next"

    /// Copies `identity.key` (the person key) to `person.key`, unless it is there already.
    public func keepPersonKey() throws(KeyFileError) {
        guard var contents = try KeyFileIO.readIfPresent(at: identityPath, limit: KeyFile.maximumFileBytes) else {
            throw .unreadable(path: identityPath, reason: KeyFileIO.noSuchFile)
        }
        defer { KeyFileIO.wipe(&contents) }
        do {
            try KeyFileIO.createWithoutReplacing(at: personPath, contents: contents)
        } catch {
            guard case .alreadyExists = error else { throw error }
        }
    }

    /// The device key waiting to become `identity.key`: the one an interrupted handover left,
    /// or a new one, written under `passphrase` like the person key.
    public func waitingDeviceKey(passphrase: [UInt8]?) throws(KeyFileError) -> Identity {
        try KeyFile.loadOrCreate(at: nextIdentityPath, passphrase: passphrase).identity
    }

    /// Puts the device key in place once the store has certified it: `store.key.next` (the
    /// store key sealed to the device), then `identity.key.next` over `identity.key`, then
    /// `store.key.next` over `store.key`.
    public func commit(device: Identity, storeKey: SecureBytes) throws(KeyFileError) {
        var sealed = StoreKeyFile.encode(storeKey, identity: device)
        defer { KeyFileIO.wipe(&sealed) }
        unlink(nextStoreKeyPath)  // a copy an interrupted handover left: sealed to the same device
        try KeyFileIO.createWithoutReplacing(at: nextStoreKeyPath, contents: sealed)
        try KeyFileIO.rename(nextIdentityPath, over: identityPath)
        try KeyFileIO.rename(nextStoreKeyPath, over: storeKeyPath)
    }

    /// Whether this directory's identity is a device key that took over from its person key.
    public var hasPersonKey: Bool {
        var info = stat()
        return lstat(personPath, &info) == 0
    }
}

extension KeyFileIO {
    /// Renames `source` over `destination` (atomic on one file system) and syncs the directory.
    static func rename(_ source: String, over destination: String) throws(KeyFileError) {
        #if canImport(Glibc)
            let status = Glibc.rename(source, destination)
        #else
            let status = Darwin.rename(source, destination)
        #endif
        guard status == 0 else {
            throw .cannotCreate(path: destination, reason: text(ofErrno: errno))
        }
        syncDirectory(containing: destination)
    }
}
