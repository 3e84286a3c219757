import Foundation
import Identity
import Replica
import Store
import TestSupport
import Testing
import Wire

/// A delete erases the words (docs/ARCHITECTURE.md, *A delete erases the words*): on every
/// replica, from the database files as a thief would read them (`parley.db`, `-wal`, `-shm`,
/// with the store still open), in sync and in export files; and no one but the author can
/// make a message vanish.
@Suite struct ErasureTests {
    let alice = Fixtures.identity(0)
    let bob = Fixtures.identity(1)
    let lobby = PartitionDescriptor.room(RoomName("#Lobby")!)

    /// Words no test run has written before: the database files are searched for them.
    struct Words {
        let post = "the secret word xyzzy-\(UInt64.random(in: 1...UInt64.max))"
        /// Long enough to spill into overflow pages (1 KiB pages), which a delete frees.
        let longPost = "plugh-\(UInt64.random(in: 1...UInt64.max)) " + String(repeating: "a long message that fills pages ", count: 100)
        let edit = "edited xyzzy-edit-\(UInt64.random(in: 1...UInt64.max))"
        let kept = "still here plover-\(UInt64.random(in: 1...UInt64.max))"
        var erased: [String] { [post, String(longPost.prefix(26)), edit] }
    }

    func withDirectory(_ body: (String) throws -> Void) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-erase-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try body(dir)
    }

    /// Which of `words` the files `parley.db`, `-wal` and `-shm` under `dir` hold, as raw bytes.
    static func wordsOnDisk(_ words: [String], in dir: String) -> [String] {
        let files = ["parley.db", "parley.db-wal", "parley.db-shm"].compactMap { FileManager.default.contents(atPath: dir + "/" + $0) }
        return words.filter { word in files.contains { $0.range(of: Data(word.utf8)) != nil } }
    }

    /// Alice posts twice and edits the first, then deletes both, and posts one more she keeps.
    func writeAndDelete(_ words: Words, in store: ReplicaStore) throws {
        let now = Fixtures.now()
        let secret = try store.author(post(words.post), in: lobby.id, by: alice, nowMillis: now)
        let long = try store.author(post(words.longPost), in: lobby.id, by: alice, nowMillis: now)
        try store.author(.edit(target: secret.id, text: words.edit), in: lobby.id, by: alice, nowMillis: now)
        try store.author(post(words.kept), in: lobby.id, by: alice, nowMillis: now)
        try store.author(.delete(target: secret.id), in: lobby.id, by: alice, nowMillis: now)
        try store.author(.delete(target: long.id), in: lobby.id, by: alice, nowMillis: now)
    }

    @Test func aDelete_leavesNoWordOfThePostOrItsEdits_inTheDatabaseFiles() throws {
        try withDirectory { dir in
            let words = Words()
            let store = try ReplicaStore(path: dir + "/parley.db")
            try store.log.ensurePartition(lobby, joined: true)
            try writeAndDelete(words, in: store)
            // The store stays open, as a running node's would.
            #expect(Self.wordsOnDisk(words.erased, in: dir) == [])
            #expect(Self.wordsOnDisk([words.kept], in: dir) == [words.kept], "the files are read as they are")
            let history = try store.views.history(lobby.id)
            #expect(history.map(\.text) == ["", "", words.kept])
            #expect(history.map(\.deleted) == [true, true, false])
            withExtendedLifetime(store) {}
        }
    }

    @Test func aReplicaThatSyncsAfterTheDelete_neverStoresTheWords() throws {
        try withDirectory { dir in
            let words = Words()
            let author = try Fixtures.store(partitions: [lobby])
            try writeAndDelete(words, in: author)
            let replica = try ReplicaStore(path: dir + "/parley.db")
            try replica.log.ensurePartition(lobby, joined: true)
            let sent = try author.outbound.sendable(try author.log.ops(in: lobby.id, author: alice.id, fromSeq: 1, limit: 100), nowMillis: Fixtures.now()).ops
            #expect(sent.count == 6)
            let outcomes = try replica.apply(sent, nowMillis: Fixtures.now())
            #expect(outcomes.allSatisfy { $0 == .applied }, "\(outcomes)")
            #expect(Self.wordsOnDisk(words.erased, in: dir) == [])
            #expect(try replica.log.digest(lobby.id) == author.log.digest(lobby.id))
            #expect(try replica.views.history(lobby.id) == author.views.history(lobby.id))
            withExtendedLifetime(replica) {}
        }
    }

    @Test func anExportOfADeletedMessage_carriesNoWords_andImportsWithTheSameDigest() throws {
        try withDirectory { dir in
            let words = Words()
            let author = try Fixtures.store(partitions: [lobby])
            try writeAndDelete(words, in: author)
            var bytes: [UInt8] = []
            try OpArchiver(author).export([lobby.id], to: try OpArchive.Writer { bytes += $0 }, nowMillis: Fixtures.now())
            let file = Data(bytes)
            #expect(words.erased.filter { file.range(of: Data($0.utf8)) != nil } == [])
            #expect(file.range(of: Data(words.kept.utf8)) != nil)

            let fresh = try ReplicaStore(path: dir + "/parley.db")
            var offset = 0
            let reader = try OpArchive.Reader { count in
                defer { offset = min(bytes.count, offset + count) }
                return Array(bytes[offset..<min(bytes.count, offset + count)])
            }
            let imported = try OpArchiver(fresh).importArchive(reader, me: bob.id, nowMillis: Fixtures.now())
            #expect(imported.problem == nil && imported.refused == 0, "\(imported)")
            #expect(try fresh.log.digest(lobby.id) == author.log.digest(lobby.id))
            #expect(try fresh.views.history(lobby.id) == author.views.history(lobby.id))
            #expect(Self.wordsOnDisk(words.erased, in: dir) == [])
            withExtendedLifetime(fresh) {}
        }
    }

    // MARK: The erased form and its proof

    @Test func erasedOps_keepTheirHeaders_soTheChainStillVerifies() throws {
        let store = try Fixtures.store(partitions: [lobby])
        try writeAndDelete(Words(), in: store)
        let ops = try store.log.ops(in: lobby.id, author: alice.id, fromSeq: 1, limit: 100)
        #expect(ops.map(\.isErased) == [true, true, true, false, false, false])
        #expect(ops.allSatisfy { $0.hasValidSignature })
        #expect(ops.filter(\.isErased).allSatisfy { $0.erasureProblem() == nil && $0.body.isEmpty })
        #expect(throws: Never.self) { try verifyChain(ops[...], after: .zero) }
        // A rebuild from the log gives the live views.
        let live = try store.views.viewSnapshot()
        try store.views.rebuildViews()
        #expect(try store.views.viewSnapshot() == live)
    }

    /// The ops a relay would forge from: alice's post, her edit of it, her delete of both
    /// (naming the edit); a second post of hers she deleted; bob's post and delete.
    struct Forgery {
        let post, edit, other, deleteOther, delete, bobsPost, bobsDelete: Replica.Operation
        init(alice: Identity, bob: Identity, room: PartitionID) {
            var factory = OpFactory()
            post = factory.make(plainPost("a"), in: room, by: alice)
            edit = factory.make(.edit(target: post.id, targetSeq: post.seq, text: "b"), in: room, by: alice)
            other = factory.make(plainPost("c"), in: room, by: alice)
            deleteOther = factory.make(.delete(target: other.id, targetSeq: other.seq), in: room, by: alice)
            delete = factory.make(.delete(target: post.id, targetSeq: post.seq, erasing: [edit.seq]), in: room, by: alice)
            bobsPost = factory.make(plainPost("d"), in: room, by: bob)
            bobsDelete = factory.make(.delete(target: bobsPost.id, targetSeq: bobsPost.seq), in: room, by: bob)
        }
    }

    @Test func anErasureWithoutItsAuthorsProof_isRefused() throws {
        let f = Forgery(alice: alice, bob: bob, room: lobby.id)
        func refused(_ op: Replica.Operation, _ why: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let store = try Fixtures.store(partitions: [lobby])
            let outcome = try store.apply(op, nowMillis: Fixtures.now())
            guard case .rejected(.invalid(.unprovenErasure(let reason))) = outcome else {
                Issue.record("expected an unproven erasure, got \(outcome)", sourceLocation: sourceLocation)
                return
            }
            #expect(reason.contains(why), "\(reason)", sourceLocation: sourceLocation)
            #expect(try store.log.opCount(lobby.id) == 0, sourceLocation: sourceLocation)
        }
        // Another author's delete, a delete of another post, a delete that does not name the
        // edit, a proof whose signature was changed, a proof that is no delete, a proof earlier in the chain.
        try refused(try Replica.Operation(erasedHeader: f.post.header, proof: f.bobsDelete), "another author's")
        try refused(try Replica.Operation(erasedHeader: f.post.header, proof: f.deleteOther), "deletes another op")
        try refused(try Replica.Operation(erasedHeader: f.edit.header, proof: f.deleteOther), "does not name this edit")
        var forged = f.delete.header
        forged[Replica.Operation.signedBytes] ^= 1
        try refused(try Replica.Operation(erasedHeader: f.post.header, proof: try Replica.Operation(header: forged, body: f.delete.body)), "signature")
        try refused(try Replica.Operation(erasedHeader: f.post.header, proof: f.other), "not a delete")
        try refused(try Replica.Operation(erasedHeader: f.other.header, proof: f.post), "not a delete")
        // No proof at all cannot even be read: the erased form is a header and a whole op.
        #expect(throws: OperationError.self) { try Replica.Operation(erasedEncoding: f.post.header) }
        #expect(throws: OperationError.self) { try Replica.Operation(erasedEncoding: f.post.header + f.delete.header) }

        // With its author's proof, each is taken erased, and the chain goes on.
        let store = try Fixtures.store(partitions: [lobby])
        let chain = [
            try Replica.Operation(erasedHeader: f.post.header, proof: f.delete), try Replica.Operation(erasedHeader: f.edit.header, proof: f.delete),
            try Replica.Operation(erasedHeader: f.other.header, proof: f.deleteOther), f.deleteOther, f.delete,
        ]
        let outcomes = try store.apply(chain, nowMillis: Fixtures.now())
        #expect(outcomes == Array(repeating: .applied, count: 5), "\(outcomes)")
        #expect(try store.views.history(lobby.id).map(\.deleted) == [true, true])
    }

    @Test func aConversationsOps_areNeverTakenErased() throws {
        let conversation = PartitionDescriptor.conversation(creator: alice.id, nonce: Bytes32(w0: 7, w1: 7, w2: 7, w3: 7))
        let f = Forgery(alice: alice, bob: bob, room: conversation.id)
        let store = try Fixtures.store(partitions: [conversation])
        let outcome = try store.apply(try Replica.Operation(erasedHeader: f.post.header, proof: f.delete), nowMillis: Fixtures.now())
        #expect(outcome == .rejected(.invalid(.unprovenErasure("only a room's ops are erased"))))
    }

    @Test func aDeleteNamingAnotherPostsEdit_isRefused_andADeletedMessageIsNotEdited() throws {
        var factory = OpFactory()
        let first = factory.make(plainPost("one"), in: lobby.id, by: alice)
        let second = factory.make(plainPost("two"), in: lobby.id, by: alice)
        let editOfSecond = factory.make(.edit(target: second.id, targetSeq: second.seq, text: "two!"), in: lobby.id, by: alice)
        let lying = factory.make(.delete(target: first.id, targetSeq: first.seq, erasing: [editOfSecond.seq]), in: lobby.id, by: alice)
        let store = try Fixtures.store(partitions: [lobby])
        #expect(try store.apply([first, second, editOfSecond], nowMillis: Fixtures.now()) == [.applied, .applied, .applied])
        #expect(try store.apply(lying, nowMillis: Fixtures.now()) == .rejected(.rule(.notAuthorOfTarget)))
        #expect(try store.views.history(lobby.id).map(\.text) == ["one", "two!"])

        try store.author(.delete(target: first.id), in: lobby.id, by: alice, nowMillis: Fixtures.now())
        #expect(throws: StoreError.self) { try store.author(.edit(target: first.id, text: "again"), in: lobby.id, by: alice, nowMillis: Fixtures.now()) }
    }
}

/// `post(_:)`, which the `Forgery` initializer cannot name: its own `post` property hides it.
private func plainPost(_ text: String) -> OperationBody { post(text) }
