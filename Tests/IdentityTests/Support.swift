import Foundation
import Identity
import Sodium
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs `body` with the path of a fresh directory under the system's temporary directory,
/// and removes the directory (with anything inside) afterwards.
func withTemporaryDirectory(_ body: (String) throws -> Void) throws {
    let path = try makeTemporaryDirectory()
    defer { removeTemporaryDirectory(path) }
    try body(path)
}

/// A fresh directory under the system's temporary directory; pair with `removeTemporaryDirectory`.
func makeTemporaryDirectory() throws -> String {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("parley-identity-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url.path
}

func removeTemporaryDirectory(_ path: String) {
    // Give back any permissions a test took away, so removal cannot fail.
    chmod(path, 0o700)
    try? FileManager.default.removeItem(atPath: path)
}

/// The bytes of the file at `path`.
func contents(of path: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
}

/// Replaces the file at `path` with `bytes`, mode 0600 (a damaged key file, as a disk would leave it).
func overwrite(_ path: String, with bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    #expect(chmod(path, 0o600) == 0, sourceLocation: sourceLocation)
}

/// The permission bits of the file at `path`.
func permissions(of path: String, sourceLocation: SourceLocation = #_sourceLocation) -> UInt32? {
    var info = stat()
    guard stat(path, &info) == 0 else {
        Issue.record("cannot stat \(path)", sourceLocation: sourceLocation)
        return nil
    }
    return UInt32(info.st_mode & 0o7777)
}

/// The error `body` throws, or nil if it returns.
func keyFileError<T>(_ body: () throws(KeyFileError) -> T) -> KeyFileError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}

/// Whether the tests run as root, for whom permission bits do not stop reads or writes.
var isRoot: Bool { geteuid() == 0 }

// MARK: - Key files

/// A fast passphrase cost, so the tests do not spend 64 MiB per key.
let testCost = PasswordHash.Cost.minimum
let testPassphrase = Array("correct horse battery staple".utf8)

// Offsets from the byte tables in KeyFile's doc comment.
let plainFileBytes = 89
let passphraseFileBytes = 161
let kindOffset = 8
let publicKeyOffset = 9
let seedOffset = 41
let operationsOffset = 57
let memoryOffset = 65
let checksumBytes = 16

/// `bytes` with its trailing checksum recomputed, as a careful forger would leave it.
func withFixedChecksum(_ bytes: [UInt8]) -> [UInt8] {
    let body = Array(bytes.dropLast(checksumBytes))
    return body + GenericHash.hash(body, outputBytes: checksumBytes)
}

func bigEndian(_ bytes: ArraySlice<UInt8>) -> UInt64 {
    bytes.reduce(0) { $0 << 8 | UInt64($1) }
}
