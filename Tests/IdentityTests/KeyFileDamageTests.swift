import Foundation
import Identity
import Sodium
import TestSupport
import Testing

/// Key files changed on disk: every damage is reported as such, never as a wrong passphrase,
/// and never crashes.
@Suite struct KeyFileDamageTests {
    @Test func keyFile_truncatedAtEveryLength_isCorrupted() throws {
        try withTemporaryDirectory { dir in
            for (name, secret) in [("plain.key", nil), ("locked.key", testPassphrase)] {
                let path = dir + "/" + name
                try KeyFile.create(at: path, passphrase: secret, identity: Identity(), cost: testCost)
                let whole = try contents(of: path)
                for length in 0..<whole.count {
                    try overwrite(path, with: Array(whole.prefix(length)))
                    #expect(
                        keyFileError { () throws(KeyFileError) in try KeyFile.load(at: path, passphrase: secret) }
                            == .corrupted(path: path),
                        "\(name) cut to \(length) bytes")
                }
            }
        }
    }

    @Test func keyFile_withAnyByteFlipped_isCorrupted() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/identity.key"
            try KeyFile.create(at: path, identity: Identity())
            let whole = try contents(of: path)
            for offset in whole.indices {
                var damaged = whole
                damaged[offset] ^= 0x01
                try overwrite(path, with: damaged)
                #expect(keyFileError { () throws(KeyFileError) in try KeyFile.load(at: path) } == .corrupted(path: path), "byte \(offset)")
            }
        }
    }

    @Test func keyFile_seedNotMatchingPublicKey_isCorrupted() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/identity.key"
            try KeyFile.create(at: path, identity: Identity())
            var bytes = try contents(of: path)
            bytes[seedOffset + 5] ^= 0x80
            // With the checksum made to match, only the public-key check can notice.
            try overwrite(path, with: withFixedChecksum(bytes))
            #expect(throws: KeyFileError.corrupted(path: path)) { try KeyFile.load(at: path) }
        }
    }

    @Test func keyFile_garbage_isCorrupted() throws {
        let seed = SeededRandom.announce("keyFile_garbage_isCorrupted")
        var random = SeededRandom(seed: seed)
        try withTemporaryDirectory { dir in
            let path = dir + "/identity.key"
            var samples: [[UInt8]] = [[], Array("hello\n".utf8), Array(repeating: 0, count: plainFileBytes)]
            for length in [1, 16, 17, 88, 89, 90, 161, 4096] {
                samples.append((0..<length).map { _ in UInt8.random(in: 0...255, using: &random) })
            }
            for sample in samples {
                try overwrite(path, with: sample)
                #expect(
                    keyFileError { () throws(KeyFileError) in try KeyFile.load(at: path) } == .corrupted(path: path),
                    "\(sample.count) bytes, seed \(seed)")
            }
        }
    }

    @Test func keyFile_longerThanAnyKeyFile_isCorrupted() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/identity.key"
            try KeyFile.create(at: path, identity: Identity())
            try overwrite(path, with: try contents(of: path) + [UInt8](repeating: 0, count: 1 << 20))
            #expect(throws: KeyFileError.corrupted(path: path)) { try KeyFile.load(at: path) }
        }
    }

    @Test func keyFile_ofNewerVersionOrKind_isUnsupported() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/identity.key"
            // The last magic character is the format version.
            try overwrite(path, with: Array("PRLYKEY2".utf8) + [UInt8](repeating: 7, count: 200))
            #expect(throws: KeyFileError.unsupportedFormat(path: path)) { try KeyFile.load(at: path) }
            try overwrite(path, with: Array("PRLYKEY9".utf8))
            #expect(throws: KeyFileError.unsupportedFormat(path: path)) { try KeyFile.load(at: path) }

            try FileManager.default.removeItem(atPath: path)
            try KeyFile.create(at: path, identity: Identity())
            var bytes = try contents(of: path)
            bytes[kindOffset] = 9
            try overwrite(path, with: withFixedChecksum(bytes))
            #expect(throws: KeyFileError.unsupportedFormat(path: path)) { try KeyFile.load(at: path) }
        }
    }

    // MARK: Passphrase files

    @Test func keyFile_encryptedWithDamagedHeader_isCorruptedNotWrongPassphrase() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/identity.key"
            try KeyFile.create(at: path, passphrase: testPassphrase, identity: Identity(), cost: testCost)
            var bytes = try contents(of: path)
            bytes[operationsOffset - 3] ^= 0x10  // inside the salt
            try overwrite(path, with: bytes)
            #expect(throws: KeyFileError.corrupted(path: path)) { try KeyFile.load(at: path, passphrase: testPassphrase) }
        }
    }

    @Test func keyFile_encryptedWithExcessiveCost_isRefusedWithoutHashing() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/identity.key"
            try KeyFile.create(at: path, passphrase: testPassphrase, identity: Identity(), cost: testCost)
            let whole = try contents(of: path)
            for (offset, value) in [(operationsOffset, UInt64(1) << 40), (operationsOffset, 0), (memoryOffset, UInt64(1) << 44)] {
                var bytes = whole
                for i in 0..<8 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> UInt64(56 - 8 * i)) }
                try overwrite(path, with: withFixedChecksum(bytes))
                #expect(
                    keyFileError { () throws(KeyFileError) in try KeyFile.load(at: path, passphrase: testPassphrase) }
                        == .corrupted(path: path),
                    "limit \(value) at \(offset)")
            }
        }
    }
}
