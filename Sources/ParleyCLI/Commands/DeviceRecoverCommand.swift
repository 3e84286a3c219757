import Foundation
import Identity
import NodeRuntime
import Replica
import SQLite
import Store

/// `parley device recover`: a data directory whose identity forked (its `identity.key` was
/// copied to another machine and both wrote) goes on writing as a new device of the person.
/// `parley run` does the same at start, so a node recovers by itself.
struct DeviceRecoverCommand: Command {
    let name = "device recover"
    let summary = "go on writing after your identity forked (identity.key copied to another machine): this directory becomes a new device of yours"
    let usage = ["device recover [--name DEVICE]"]
    static let deviceName = Option<String>.deviceName("the new device's name in `device list` (default: the host name)")
    let options = [Self.deviceName.spec]
    let details = [
        "Where your key forked, its chain stays frozen at the fork on every node (the proof travels with it). This makes a new "
            + "device key in identity.key, certified by your person key, which moves to person.key: your id, profile, rooms and "
            + "conversations stay yours, and what you write from now on goes on the device's own chain. Run it on each machine "
            + "that had the copy; each becomes a device of its own. `parley run` does this by itself at start.",
        "Stop the node of this directory first. With no fork of your key here it does nothing.",
    ]
    let examples = ["device recover", "device recover --name field-laptop"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        let directory = try context.dataDirectory()
        let lock: DataDirectoryLock
        do {
            lock = try DataDirectoryLock(directory: directory.path)
        } catch .alreadyRunning(_, let pid) {
            throw CLIError.failure(
                "a node runs for \(directory.path)\(pid.map { " (pid \($0))" } ?? ""); stop it first (`parley run` recovers by itself when it starts)")
        } catch {
            throw CLIError.failure(error.description)
        }
        defer { lock.release() }
        guard let recovery = try context.recoverFromFork(name: try arguments.value(Self.deviceName) ?? InitCommand.defaultDeviceName) else {
            let identity = try context.identity()
            let store = try context.store()
            if try context.storeCall({ try store.forks.chains().contains { $0.author == identity.id } }) {
                throw CLIError.failure(
                    "this device's own key forked (its identity.key was copied), and only a person key can hand over to a new device; "
                        + "pair this machine again (`parley --data-dir NEW_DIR init --pair CODE`) and revoke this device from there")
            }
            context.output.line("nothing to recover: your key has no fork in this store")
            return 0
        }
        context.output.line(recovery.summary)
        return 0
    }
}

/// A data directory handed over from a forked person key to a new device (`Context.recoverFromFork`).
struct ForkRecovery {
    var person: UserID
    var device: UserID
    var forks: [ForkedChain]

    /// One line for a person: what forked, what this directory writes as now.
    var summary: String {
        let places = forks.map { "\($0.name) at seq \($0.seq)" }.joined(separator: ", ")
        return "your key forked in \(places); this directory now writes as device \(device.short) of \(person.short), "
            + "and your person key is in person.key (keep it safe: it can certify and revoke your devices)"
    }
}

extension Context {
    /// Whether the store may hold a fork proof: one read on a read-only connection, so a start
    /// where nothing forked (nearly every start) does not open the store a second time. True
    /// when the read cannot tell (an old store, a damaged file): the full check decides then.
    func storeMayHoldForks() -> Bool {
        guard let path = try? dataDirectory().databasePath, FileManager.default.fileExists(atPath: path) else { return false }
        let key = Database.fileFormat(at: path) == .encrypted ? (try? storeKey()) : nil
        guard let database = try? Database(path: path, mode: .readOnly, cipherKey: key?.bytes) else { return true }
        defer { database.close() }
        let found = (try? database.scalar("SELECT EXISTS (SELECT 1 FROM fork_proofs)", as: Int.self)) ?? nil
        return found.map { $0 != 0 } ?? true
    }

    /// Hands this data directory over to a new device key when its identity is a person key
    /// that forked here (docs/DESIGN.md §3.8, "Recovering a forked store"); nil when it did not
    /// fork, or is a device already. The caller holds the directory's lock, so no node writes
    /// meanwhile. Safe to repeat after an interruption: each step finds what the last one left.
    func recoverFromFork(name: String) throws -> ForkRecovery? {
        let person = try identity()
        let store = try store()
        let forks = try storeCall { () throws -> [ForkedChain] in
            guard try store.devices.person(of: person.id) == person.id else { return [] }
            return try store.forks.chains().filter { $0.author == person.id }
        }
        guard !forks.isEmpty else { return nil }
        let handover = DeviceKeyHandover(directory: try dataDirectory().path)
        let passphrase = try passphrase()
        let device: Identity
        do throws(KeyFileError) {
            try handover.keepPersonKey()
            device = try handover.waitingDeviceKey(passphrase: passphrase)
        } catch {
            throw ErrorReport.keyFileError(error)
        }
        try storeCall { try store.certifyDeviceAfterFork(device, name: name, person: person, nowMillis: nowMillis) }
        let storeKey = try storeKey()
        do throws(KeyFileError) {
            try handover.commit(device: device, storeKey: storeKey)
        } catch {
            throw ErrorReport.keyFileError(error)
        }
        adopt(device)
        return ForkRecovery(person: person.id, device: device.id, forks: forks)
    }
}
