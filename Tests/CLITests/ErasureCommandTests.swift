import Foundation
import SQLite
import TestSupport
import Testing

/// `parley delete` leaves no word of the message, or of its edits, in the data directory's files.
@Suite(.onCommandThreads) struct ErasureCommandTests {
    @Test func send_edit_delete_leaveNoWordInTheDataDirectory() throws {
        try withSandbox { sandbox in
            sandbox.initialize()
            let secret = "the secret word xyzzy-\(UInt64.random(in: 1...UInt64.max))"
            let edited = "edited xyzzy-edit-\(UInt64.random(in: 1...UInt64.max))"
            let kept = "still here plover-\(UInt64.random(in: 1...UInt64.max))"
            let sent = sandbox.parley("send", "--room", "lobby", secret)
            expectSuccess(sent)
            let id = sent.stdout.trimmingCharacters(in: .newlines)
            expectSuccess(sandbox.parley("edit", id, edited))
            expectSuccess(sandbox.parley("send", "--room", "lobby", kept))
            expectSuccess(sandbox.parley("delete", id))

            let files = Self.files(under: sandbox.dataDir)
            #expect(files.keys.contains { $0.hasSuffix("/parley.db") }, "\(files.keys.sorted())")
            for word in [secret, edited] {
                #expect(files.filter { $0.value.range(of: Data(word.utf8)) != nil }.keys.sorted() == [], "\(word)")
            }
            // The files are encrypted (docs/DESIGN.md §5.1): no word is in them in clear. Erasure is
            // about the store's own pages, so read every page of the file through its key, free
            // pages included, and look there too.
            for word in [secret, edited, kept] {
                #expect(!files.values.contains { $0.range(of: Data(word.utf8)) != nil }, "\(word) is in clear in a file")
            }
            let key = try #require(try NodeStore.key(sandbox.dataDir))
            let pages = Data(try Database.decryptedPages(of: sandbox.dataDir + "/parley.db", key: key.bytes))
            for word in [secret, edited] { #expect(pages.range(of: Data(word.utf8)) == nil, "\(word) is in a page of the store") }
            #expect(pages.range(of: Data(kept.utf8)) != nil, "the pages are read as they are")
            let messages = sandbox.parley("history", "--room", "lobby", "--json").jsonArray()
            #expect(messages.map { $0["deleted"] as? Bool } == [true, false])
        }
    }

    /// Every regular file under `directory`, by path.
    static func files(under directory: String) -> [String: Data] {
        var found: [String: Data] = [:]
        let enumerator = FileManager.default.enumerator(atPath: directory)
        while let name = enumerator?.nextObject() as? String {
            let path = directory + "/" + name
            if let data = FileManager.default.contents(atPath: path) { found[path] = data }
        }
        return found
    }
}
