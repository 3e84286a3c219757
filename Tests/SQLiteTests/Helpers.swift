import Foundation
import SQLite
import Testing

/// Runs `body` with a fresh directory under the system temporary directory, removed afterwards.
func withTemporaryDirectory<T>(_ body: (URL) throws -> T) throws -> T {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("parley-sqlite-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try body(directory)
}

/// Expects `body` to throw an `SQLiteError` with primary code `code` and returns it.
@discardableResult
func expectSQLiteError(
    code: Int32, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) -> SQLiteError? {
    let error = #expect(throws: SQLiteError.self, sourceLocation: sourceLocation) { try body() }
    #expect(error?.code == code, "\(String(describing: error))", sourceLocation: sourceLocation)
    return error
}

/// The size of a file, or `nil` if it does not exist.
func fileSize(_ url: URL) -> Int? {
    (try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? Int
}

/// An error of the test's own, to check it comes back unchanged.
struct TestFailure: Error, Equatable {
    let tag: String
}
