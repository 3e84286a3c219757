import Foundation
import Sodium
import Testing

@testable import Identity

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The key files of a forked store handed over to a device key (docs/DESIGN.md §3.8): whole,
/// protected like the person key, and openable at every point an interruption can leave.
@Suite struct DeviceKeyHandoverTests {
    /// A data directory with a person key and its store key.
    func directory(_ dir: String, passphrase: [UInt8]? = nil) throws -> (person: Identity, storeKey: SecureBytes) {
        let person = Identity()
        try KeyFile.create(at: dir + "/identity.key", passphrase: passphrase, identity: person, cost: .minimum)
        return (person, try StoreKeyFile.loadOrCreate(at: dir + "/store.key", identity: person))
    }

    func mode(_ path: String) -> mode_t {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o777 : 0
    }

    @Test func aHandover_putsTheDeviceInIdentityKey_thePersonInPersonKey_andSealsTheStoreKeyToTheDevice() throws {
        try withTemporaryDirectory { dir in
            let (person, storeKey) = try directory(dir)
            let handover = DeviceKeyHandover(directory: dir)
            #expect(!handover.hasPersonKey)
            try handover.keepPersonKey()
            let device = try handover.waitingDeviceKey(passphrase: nil)
            // Until the commit, the directory is the person's.
            #expect(try KeyFile.load(at: dir + "/identity.key").id == person.id)
            try handover.commit(device: device, storeKey: storeKey)

            #expect(handover.hasPersonKey)
            #expect(try KeyFile.load(at: dir + "/identity.key").id == device.id)
            #expect(try KeyFile.load(at: dir + "/person.key").id == person.id)
            #expect(try StoreKeyFile.load(at: dir + "/store.key", identity: device).bytes == storeKey.bytes)
            #expect(throws: KeyFileError.otherIdentity(path: dir + "/store.key")) { try StoreKeyFile.load(at: dir + "/store.key", identity: person) }
            for name in ["identity.key", "person.key", "store.key"] { #expect(mode(dir + "/" + name) == 0o600, "\(name)") }
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["identity.key", "person.key", "store.key"])
            // Repeating the first step keeps the person key, not the device key now in identity.key.
            try handover.keepPersonKey()
            #expect(try KeyFile.load(at: dir + "/person.key").id == person.id)
        }
    }

    @Test func anInterruptedHandover_resumesWithTheSameDeviceKey() throws {
        try withTemporaryDirectory { dir in
            _ = try directory(dir)
            let handover = DeviceKeyHandover(directory: dir)
            try handover.keepPersonKey()
            let first = try handover.waitingDeviceKey(passphrase: nil)
            #expect(try handover.waitingDeviceKey(passphrase: nil).id == first.id)
        }
    }

    /// Stopped between the two renames: identity.key is the device's, store.key still the
    /// person's. Loading the store key with the device finishes the handover.
    @Test func aStoreKeyStillSealedToThePerson_isFinishedWhenTheDeviceLoadsIt() throws {
        try withTemporaryDirectory { dir in
            let (_, storeKey) = try directory(dir)
            let handover = DeviceKeyHandover(directory: dir)
            try handover.keepPersonKey()
            let device = try handover.waitingDeviceKey(passphrase: nil)
            try KeyFileIO.createWithoutReplacing(at: handover.nextStoreKeyPath, contents: StoreKeyFile.encode(storeKey, identity: device))
            try KeyFileIO.rename(handover.nextIdentityPath, over: handover.identityPath)

            #expect(try StoreKeyFile.load(at: dir + "/store.key", identity: device).bytes == storeKey.bytes)
            #expect(!FileManager.default.fileExists(atPath: handover.nextStoreKeyPath))
            #expect(try StoreKeyFile.decode(contents(of: dir + "/store.key"), identity: device, path: "store.key").bytes == storeKey.bytes)
            // Another key finds nothing to finish: the file is not its.
            #expect(throws: KeyFileError.otherIdentity(path: dir + "/store.key")) { try StoreKeyFile.load(at: dir + "/store.key", identity: Identity()) }
        }
    }

    @Test func aProtectedPersonKey_givesAProtectedDeviceKey() throws {
        try withTemporaryDirectory { dir in
            let passphrase = Array("correct horse".utf8)
            let (person, storeKey) = try directory(dir, passphrase: passphrase)
            let handover = DeviceKeyHandover(directory: dir)
            try handover.keepPersonKey()
            let device = try handover.waitingDeviceKey(passphrase: passphrase)
            try handover.commit(device: device, storeKey: storeKey)
            #expect(throws: KeyFileError.self) { try KeyFile.load(at: dir + "/identity.key") }
            #expect(try KeyFile.load(at: dir + "/identity.key", passphrase: passphrase).id == device.id)
            #expect(try KeyFile.load(at: dir + "/person.key", passphrase: passphrase).id == person.id)
        }
    }
}
