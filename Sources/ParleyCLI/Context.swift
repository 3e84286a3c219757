import Foundation
import Identity
import NodeRuntime
import Replica
import SQLite
import Sodium
import Store

/// What a command works with: the data directory, the identity, the store, the output and the
/// clock. Everything is opened lazily, so `help` touches no file and a command that fails on its
/// arguments never creates anything.
///
/// One per process run; not thread-safe (a command runs on one thread).
public final class Context {
    public let output: Output
    let environment: [String: String]
    private let dataDirectoryOption: String?
    private let passphraseFileOption: String?
    private let clock: () -> UInt64
    private var resolvedDirectory: DataDirectory?
    private var loadedIdentity: Identity?
    private var openedStore: ReplicaStore?

    /// `dataDirectory` and `passphraseFile` are the global options, nil when not given;
    /// `clock` gives Unix milliseconds (the wall clock unless a caller substitutes one).
    init(
        output: Output, environment: [String: String], dataDirectory: String?, passphraseFile: String?,
        clock: @escaping () -> UInt64 = Context.wallClockMillis
    ) {
        self.output = output
        self.environment = environment
        self.dataDirectoryOption = dataDirectory
        self.passphraseFileOption = passphraseFile
        self.clock = clock
    }

    /// A context for the same data directory, options and environment that writes to `output`
    /// (the terminal chat runs commands with their output captured for its screen).
    func redirected(to output: Output) -> Context {
        let context = Context(
            output: output, environment: environment, dataDirectory: dataDirectoryOption, passphraseFile: passphraseFileOption, clock: clock)
        context.resolvedDirectory = resolvedDirectory
        context.isChat = true
        context.loadedIdentity = loadedIdentity
        context.clockSkewMillis = clockSkewMillis
        return context
    }

    /// Unix time in milliseconds from `Date()`: the wall clock the HLC starts from.
    static func wallClockMillis() -> UInt64 {
        UInt64(max(0, Date().timeIntervalSince1970 * 1000))
    }

    /// The current time for store calls: the wall clock moved by `clockSkewMillis`, so every
    /// op a command stamps (send, the chat's commands, a node's own writes) is skewed alike.
    var nowMillis: UInt64 { FaultConfiguration.skewed(clock(), by: clockSkewMillis) }

    /// Milliseconds added to the wall clock of every op this process stamps: `$PARLEY_CLOCK_SKEW_MS`,
    /// or `--clock-skew-ms` of `run` and `chat` (the lab's clock-skew fault).
    var clockSkewMillis: Int64 = 0

    /// `text` as a clock skew from `source` (an option or the environment variable): signed
    /// milliseconds, at most a day either way.
    static func clockSkew(_ text: String, from source: String, command: String?) throws(CLIError) -> Int64 {
        let limit = FaultConfiguration.maxClockSkewMillis
        guard let value = Int64(text), (-limit...limit).contains(value) else {
            throw .usage("\(source) must be milliseconds from -\(limit) to \(limit), e.g. 180000 or -120000, not '\(text)'", command: command)
        }
        return value
    }

    // MARK: Data directory and identity

    /// The data directory chosen by the options and environment (not checked on disk).
    func dataDirectory() throws(CLIError) -> DataDirectory {
        if let resolvedDirectory { return resolvedDirectory }
        let directory = try DataDirectory.resolve(option: dataDirectoryOption, environment: environment)
        resolvedDirectory = directory
        return directory
    }

    /// Whether the global `--passphrase-file` (the identity key's) was given on a command line
    /// (not in the chat, whose `/join ROOM --private` asks for a room's passphrase itself).
    var passphraseFileGiven: Bool { passphraseFileOption != nil && !isChat }
    /// Set on the chat's context (`redirected(to:)`).
    private(set) var isChat = false

    /// The passphrase of a private room, read from `path` (`--room-passphrase-file`) without its
    /// final line break; a failure naming the fix when it cannot protect a room.
    func roomPassphrase(_ path: String) throws(CLIError) -> [UInt8] {
        var bytes = try readSmallFile(path, what: "room passphrase file")
        if bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        if let problem = PrivateRoomKeys.problem(withPassphrase: bytes) {
            throw .failure("the room passphrase file \(path) does not hold a usable passphrase: \(problem); write a longer one in it")
        }
        return bytes
    }

    /// The passphrase for the key file: the contents of `--passphrase-file` without its final
    /// line break, else `$PARLEY_PASSPHRASE`; nil when neither is given.
    func passphrase() throws(CLIError) -> [UInt8]? {
        if let file = passphraseFileOption {
            var bytes = try readSmallFile(file, what: "passphrase file")
            if bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
            if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
            guard !bytes.isEmpty else { throw .failure("the passphrase file \(file) is empty; write the passphrase in it") }
            return bytes
        }
        if let text = environment["PARLEY_PASSPHRASE"], !text.isEmpty { return Array(text.utf8) }
        return nil
    }

    /// The identity stored in the data directory; fails with "no identity ... run `parley init`"
    /// when there is none. The key file is never created here (only `init` creates one).
    func identity() throws(CLIError) -> Identity {
        if let loadedIdentity { return loadedIdentity }
        let directory = try dataDirectory()
        try directory.requireExisting()
        guard directory.hasKeyFile else { throw .failure(DataDirectory.noIdentity(in: directory.path)) }
        let identity: Identity
        do {
            identity = try KeyFile.load(at: directory.keyPath, passphrase: try passphrase())
        } catch let error as CLIError {
            throw error
        } catch let error as KeyFileError {
            throw ErrorReport.keyFileError(error)
        } catch {
            throw .failure("cannot load the key file \(directory.keyPath): \(error)")
        }
        loadedIdentity = identity
        return identity
    }

    /// Remembers an identity `init` just loaded or created, so later steps reuse it.
    func adopt(_ identity: Identity) {
        loadedIdentity = identity
    }

    // MARK: Store

    /// The store in the data directory, opened (and created or migrated) on first use, with the
    /// identity's keys (so private conversations are readable) and its inbox read (so
    /// conversations it was added to are joined).
    ///
    /// Needs the identity first: a data directory without one gets "run `parley init`", never a
    /// fresh empty database beside a missing key.
    func store() throws(CLIError) -> ReplicaStore {
        if let openedStore { return openedStore }
        let identity = try identity()
        let directory = try dataDirectory()
        // A plain store is converted by renaming an encrypted copy over it: a node that has the
        // plain file open (an earlier version's, since this one converts at start) would go on
        // writing to the old file, so the conversion waits for it.
        if SQLite.Database.fileFormat(at: directory.databasePath) == .plain, (try? NodeConnection.ask(ControlRequest(.ping), self)) ?? nil != nil {
            throw .failure(
                "the store \(directory.databasePath) is in the plain format of an earlier version, and a node of that version runs; "
                    + "stop it and start it again with this version, which encrypts the store")
        }
        do {
            let store = try ReplicaStore(path: directory.databasePath, key: try storeKey())
            try store.useIdentity(identity)
            try store.processInbox(me: identity)
            openedStore = store
            return store
        } catch {
            throw ErrorReport.cliError(for: error, databasePath: directory.databasePath, command: nil)
        }
    }

    /// Closes the store this command opened (before a node of this process opens its own).
    func closeStore() {
        openedStore?.database.close()
        openedStore = nil
    }

    /// The person this data directory writes for: the identity's own key, or the person whose
    /// device it is (`parley init --pair`; docs/DESIGN.md §3.8). Everything that asks "who am I"
    /// (membership, unread counts, `people`, `whoami`) asks this, and only signing uses the key.
    func me() throws(CLIError) -> UserID {
        let identity = try identity()
        let store = try store()
        return try storeCall { try store.devices.person(of: identity.id) }
    }

    /// The key the store is encrypted under (`store.key`, sealed by the identity), created with
    /// the store: every command that opens `parley.db` opens it with this key.
    func storeKey() throws(CLIError) -> SecureBytes {
        let identity = try identity()
        let directory = try dataDirectory()
        // A new key for a store already encrypted would open nothing: say what is missing.
        if !FileManager.default.fileExists(atPath: directory.storeKeyPath), SQLite.Database.fileFormat(at: directory.databasePath) == .encrypted {
            throw .failure(
                "the store \(directory.databasePath) is encrypted, and its key file \(directory.storeKeyPath) is missing; "
                    + "put store.key back (without it the store cannot be read), or move parley.db away to start a fresh store")
        }
        do {
            return try StoreKeyFile.loadOrCreate(at: directory.storeKeyPath, identity: identity)
        } catch {
            throw ErrorReport.keyFileError(error)
        }
    }

    /// Tells the node running for this data directory, if any, that this process wrote the store
    /// (ops, a room joined or left), so it pushes the news to its peers now rather than at its
    /// next `PRAGMA data_version` check. Does not wait for the node to act (a busy node would
    /// hold the command up), and is quiet when nothing was written or no node runs: the node
    /// notices by itself anyway.
    func notifyNodeOfWrites() {
        guard let store = openedStore, store.database.totalChanges > 0, let directory = resolvedDirectory?.path else { return }
        _ = try? NodeConnection.wait {
            let client = try ControlClient.connect(dataDirectory: directory)
            defer { client.close() }
            try await client.notify(ControlRequest(.poke))
        }
    }

    /// The database path, if the data directory could be resolved (for error messages).
    var databasePathIfKnown: String? { resolvedDirectory?.databasePath }

    // MARK: Rooms

    /// The room `text` names (`lobby`, `#Lobby`), or a usage error saying why it is not a name.
    func roomName(_ text: String, command: String) throws(CLIError) -> RoomName {
        guard let name = RoomName(text) else {
            let problem = RoomName.problem(with: text) ?? "it is not a valid room name"
            throw .usage("'\(text)' is not a room name: \(problem)", command: command)
        }
        return name
    }

    /// The joined room `text` names; fails with "you have not joined #x" otherwise, as IRC
    /// would: writing to or reading a room you are not in is a mistake worth pointing out.
    ///
    /// A joined private room of that name comes first (the newest epoch of its chain): scripts
    /// name a private room by its name alone, as they do a public one.
    func joinedRoom(_ text: String, command: String) throws(CLIError) -> (name: RoomName, id: PartitionID) {
        let name = try roomName(text, command: command)
        if let found = try storeCall({ try store().privateRoom(named: name) }) { return (name, found.id) }
        let id = PartitionDescriptor.room(name).id
        let record = try storeCall { try store().log.partition(id) }
        guard let record, record.joined else {
            throw .failure("you have not joined \(name); run `parley join \(name.value)` first")
        }
        return (name, id)
    }

    /// Runs a store call, turning its errors into `CLIError`s that name the database.
    @discardableResult
    func storeCall<T>(command: String? = nil, _ body: () throws -> T) throws(CLIError) -> T {
        do {
            return try body()
        } catch {
            throw ErrorReport.cliError(for: error, databasePath: databasePathIfKnown, command: command)
        }
    }

    /// Authors `body` in `partition` as this identity at the current time.
    @discardableResult
    func author(_ body: OperationBody, in partition: PartitionID, command: String) throws(CLIError) -> Replica.Operation {
        let identity = try identity()
        let store = try store()
        return try storeCall(command: command) { try store.author(body, in: partition, by: identity, nowMillis: nowMillis) }
    }

    /// The nickname of `user` in the directory, if they set one.
    func nick(of user: UserID) throws(CLIError) -> String? {
        let store = try store()
        return try storeCall { try store.directory.profile(user)?.nick }
    }
}
