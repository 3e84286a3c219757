import Foundation
import Identity
import Sodium
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite struct KeyFileTests {
    // MARK: Creating and loading

    @Test func keyFile_createThenLoad_givesSameIdentity() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/identity.key"
            let identity = Identity()
            try KeyFile.create(at: path, identity: identity)
            let loaded = try KeyFile.load(at: path)
            #expect(loaded.id == identity.id)
            #expect(loaded.keyPair.secretKey == identity.keyPair.secretKey)
        }
    }

    @Test func keyFile_loadOrCreateTwice_keepsKeyAndReportsCreatedOnlyFirst() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/identity.key"
            let first = try KeyFile.loadOrCreate(at: path)
            let second = try KeyFile.loadOrCreate(at: path)
            #expect(first.created)
            #expect(!second.created)
            #expect(first.identity.id == second.identity.id)
        }
    }

    @Test func keyFile_created_hasMode0600AndNoTemporaryFileBeside() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/identity.key"
            _ = try KeyFile.loadOrCreate(at: path)
            #expect(permissions(of: path) == 0o600)
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["identity.key"])
        }
    }

    @Test func keyFile_passphraseFile_hasMode0600() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/identity.key"
            try KeyFile.create(at: path, passphrase: testPassphrase, identity: Identity(), cost: testCost)
            #expect(permissions(of: path) == 0o600)
        }
    }

    @Test func keyFile_layout_matchesDocumentedTable() throws {
        try withTemporaryDirectory { dir in
            let identity = Identity()
            let plain = dir + "/plain.key"
            try KeyFile.create(at: plain, identity: identity)
            let bytes = try contents(of: plain)
            #expect(bytes.count == plainFileBytes)
            #expect(Array(bytes[0..<8]) == Array("PRLYKEY1".utf8))
            #expect(bytes[kindOffset] == 0)
            #expect(Array(bytes[publicKeyOffset..<publicKeyOffset + 32]) == identity.id.publicKey)
            #expect(Array(bytes[seedOffset..<seedOffset + 32]) == identity.keyPair.seed.bytes)
            #expect(withFixedChecksum(bytes) == bytes)

            let locked = dir + "/locked.key"
            try KeyFile.create(at: locked, passphrase: testPassphrase, identity: identity, cost: testCost)
            let sealed = try contents(of: locked)
            #expect(sealed.count == passphraseFileBytes)
            #expect(sealed[kindOffset] == 1)
            #expect(Array(sealed[publicKeyOffset..<publicKeyOffset + 32]) == identity.id.publicKey)
            #expect(bigEndian(sealed[operationsOffset..<operationsOffset + 8]) == testCost.operations)
            #expect(bigEndian(sealed[memoryOffset..<memoryOffset + 8]) == UInt64(testCost.memoryBytes))
            #expect(withFixedChecksum(sealed) == sealed)
            // The seed appears nowhere in the clear.
            let seed = identity.keyPair.seed.bytes
            #expect(!(0...(sealed.count - seed.count)).contains { Array(sealed[$0..<$0 + seed.count]) == seed })
        }
    }

    // MARK: Never overwriting

    @Test func keyFile_createOverExistingFile_throwsAndKeepsIt() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/identity.key"
            let original = Identity()
            try KeyFile.create(at: path, identity: original)
            let before = try contents(of: path)

            #expect(throws: KeyFileError.alreadyExists(path: path)) {
                try KeyFile.create(at: path, identity: Identity())
            }
            #expect(try contents(of: path) == before)
            #expect(try KeyFile.load(at: path).id == original.id)
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["identity.key"])
        }
    }

    @Test func keyFile_createOverAnyExistingFile_neverReplacesIt() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/identity.key"
            try overwrite(path, with: Array("not a key".utf8))
            #expect(throws: KeyFileError.alreadyExists(path: path)) {
                try KeyFile.create(at: path, identity: Identity())
            }
            #expect(try contents(of: path) == Array("not a key".utf8))
            // loadOrCreate reports the damaged file rather than replacing it.
            #expect(throws: KeyFileError.corrupted(path: path)) { try KeyFile.loadOrCreate(at: path) }
            #expect(try contents(of: path) == Array("not a key".utf8))
        }
    }

    @Test func keyFile_loadOrCreateRacing_agreesOnOneIdentity() async throws {
        let dir = try makeTemporaryDirectory()
        defer { removeTemporaryDirectory(dir) }
        let path = dir + "/identity.key"
        let outcomes = await withTaskGroup(of: Result<(UserID, Bool), KeyFileError>.self) { group in
            for _ in 0..<16 {
                group.addTask {
                    Result { () throws(KeyFileError) in
                        let outcome = try KeyFile.loadOrCreate(at: path)
                        return (outcome.identity.id, outcome.created)
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let results = try outcomes.map { try $0.get() }
        #expect(Set(results.map(\.0)).count == 1)
        #expect(results.filter(\.1).count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["identity.key"])
    }

    @Test func keyFile_createAtDirectory_throwsAlreadyExists() throws {
        try withTemporaryDirectory { dir in
            #expect(throws: KeyFileError.alreadyExists(path: dir)) {
                try KeyFile.create(at: dir, identity: Identity())
            }
        }
    }

    // MARK: Passphrase

    @Test func keyFile_passphrase_roundTrips() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/identity.key"
            let created = try KeyFile.loadOrCreate(at: path, passphrase: testPassphrase, cost: testCost)
            #expect(created.created)
            let loaded = try KeyFile.loadOrCreate(at: path, passphrase: testPassphrase, cost: testCost)
            #expect(!loaded.created)
            #expect(loaded.identity.id == created.identity.id)
            #expect(try KeyFile.load(at: path, passphrase: testPassphrase).id == created.identity.id)
        }
    }

    @Test func keyFile_wrongPassphrase_isRefused() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/identity.key"
            try KeyFile.create(at: path, passphrase: testPassphrase, identity: Identity(), cost: testCost)
            #expect(throws: KeyFileError.wrongPassphrase(path: path)) {
                try KeyFile.load(at: path, passphrase: Array("Correct horse battery staple".utf8))
            }
        }
    }

    @Test func keyFile_encryptedWithoutPassphrase_requiresOneAndIsNotReplaced() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/identity.key"
            try KeyFile.create(at: path, passphrase: testPassphrase, identity: Identity(), cost: testCost)
            let before = try contents(of: path)
            #expect(throws: KeyFileError.passphraseRequired(path: path)) { try KeyFile.load(at: path) }
            #expect(throws: KeyFileError.passphraseRequired(path: path)) { try KeyFile.load(at: path, passphrase: []) }
            #expect(throws: KeyFileError.passphraseRequired(path: path)) { try KeyFile.loadOrCreate(at: path) }
            #expect(try contents(of: path) == before)
        }
    }

    @Test func keyFile_createWithUnsupportedCost_isRefused() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/identity.key"
            let cost = PasswordHash.Cost(operations: 1, memoryBytes: 1 << 40)
            let error = keyFileError { () throws(KeyFileError) in
                try KeyFile.create(at: path, passphrase: testPassphrase, identity: Identity(), cost: cost)
            }
            guard case .cannotCreate(path, _) = error else {
                Issue.record("expected cannotCreate, got \(String(describing: error))")
                return
            }
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }

    @Test func keyFile_plainFileWithPassphraseGiven_loads() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/identity.key"
            let identity = Identity()
            try KeyFile.create(at: path, passphrase: [], identity: identity)
            #expect(try contents(of: path).count == plainFileBytes)
            #expect(try KeyFile.load(at: path, passphrase: testPassphrase).id == identity.id)
        }
    }

    // MARK: Permissions and ownership

    @Test(arguments: [0o644, 0o640, 0o604, 0o660, 0o700] as [UInt32])
    func keyFile_withGroupOrOtherAccess_isRefused(mode: UInt32) throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/identity.key"
            try KeyFile.create(at: path, identity: Identity())
            #expect(chmod(path, mode_t(mode)) == 0)
            let error = keyFileError { () throws(KeyFileError) in try KeyFile.load(at: path) }
            if mode & 0o077 == 0 {
                #expect(error == nil)
            } else {
                #expect(error == .insecurePermissions(path: path, mode: mode))
                #expect(error?.description.contains("chmod 600 \(path)") == true)
            }
        }
    }

    @Test func keyFile_withGroupReadableMode_isRefusedByLoadOrCreateToo() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/identity.key"
            _ = try KeyFile.loadOrCreate(at: path)
            #expect(chmod(path, 0o640) == 0)
            #expect(throws: KeyFileError.insecurePermissions(path: path, mode: 0o640)) { try KeyFile.loadOrCreate(at: path) }
        }
    }

    @Test(.enabled(if: isRoot, "only root can give a file to another user"))
    func keyFile_ownedByAnotherUser_isRefused() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/identity.key"
            try KeyFile.create(at: path, identity: Identity())
            #expect(chown(path, 65534, 65534) == 0)
            #expect(throws: KeyFileError.wrongOwner(path: path, owner: 65534, user: 0)) { try KeyFile.load(at: path) }
        }
    }

    // MARK: Paths that cannot work

    @Test func keyFile_underMissingDirectory_cannotBeCreated() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/missing/identity.key"
            let error = keyFileError { () throws(KeyFileError) in try KeyFile.loadOrCreate(at: path) }
            #expect(error == .cannotCreate(path: path, reason: String(cString: strerror(ENOENT))))
        }
    }

    @Test func keyFile_underRegularFile_cannotBeCreated() throws {
        try withTemporaryDirectory { dir in
            try overwrite(dir + "/file", with: [1, 2, 3])
            let path = dir + "/file/identity.key"
            let error = keyFileError { () throws(KeyFileError) in try KeyFile.create(at: path, identity: Identity()) }
            guard case .cannotCreate(path, _) = error else {
                Issue.record("expected cannotCreate, got \(String(describing: error))")
                return
            }
        }
    }

    // Root writes through permission bits, so this case can only be seen as another user.
    @Test(.disabled(if: isRoot, "root ignores directory permission bits"))
    func keyFile_inReadOnlyDirectory_cannotBeCreated() throws {
        try withTemporaryDirectory { dir in
            let locked = dir + "/locked"
            try FileManager.default.createDirectory(atPath: locked, withIntermediateDirectories: false)
            #expect(chmod(locked, 0o500) == 0)
            let path = locked + "/identity.key"
            let error = keyFileError { () throws(KeyFileError) in try KeyFile.loadOrCreate(at: path) }
            #expect(error == .cannotCreate(path: path, reason: String(cString: strerror(EACCES))))
        }
    }

    @Test func keyFile_missing_isUnreadable() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/identity.key"
            #expect(throws: KeyFileError.unreadable(path: path, reason: String(cString: strerror(ENOENT)))) {
                try KeyFile.load(at: path)
            }
        }
    }

    @Test func keyFile_atDirectory_isUnreadable() throws {
        try withTemporaryDirectory { dir in
            let error = keyFileError { () throws(KeyFileError) in try KeyFile.loadOrCreate(at: dir) }
            #expect(error == .unreadable(path: dir, reason: "it is a directory"))
        }
    }

    // MARK: Messages

    @Test func keyFileError_descriptions_nameThePathInOneLine() {
        let path = "/data/identity.key"
        let errors: [KeyFileError] = [
            .corrupted(path: path), .unsupportedFormat(path: path), .passphraseRequired(path: path),
            .wrongPassphrase(path: path), .insecurePermissions(path: path, mode: 0o644),
            .wrongOwner(path: path, owner: 1000, user: 1001), .unreadable(path: path, reason: "Permission denied"),
            .cannotCreate(path: path, reason: "No such file or directory"), .alreadyExists(path: path),
        ]
        for error in errors {
            #expect(error.description.contains(path), "\(error)")
            #expect(!error.description.contains("\n"), "\(error)")
        }
        #expect(KeyFileError.corrupted(path: path).description.contains("parley init"))
        #expect(KeyFileError.insecurePermissions(path: path, mode: 0o644).description.contains("mode 0644"))
    }

    @Test func keyFileError_chmodAdvice_quotesPathForTheShell() {
        let error = KeyFileError.insecurePermissions(path: "/home/o'neil/my data/identity.key", mode: 0o640)
        #expect(error.description.contains("chmod 600 '/home/o'\\''neil/my data/identity.key'"))
    }

    @Test func keyFileError_fromRealFiles_neverShowsKeyMaterial() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/identity.key"
            let identity = Identity()
            try KeyFile.create(at: path, identity: identity)
            var bytes = try contents(of: path)
            bytes[seedOffset] ^= 1
            try overwrite(path, with: withFixedChecksum(bytes))
            let error = try #require(keyFileError { () throws(KeyFileError) in try KeyFile.load(at: path) })
            let seed = identity.keyPair.seed.bytes
            #expect(!error.description.contains(Sodium.hex(seed)))
            #expect(!String(reflecting: error).contains(Sodium.hex(seed)))
        }
    }
}
