import Foundation
import Identity
import Replica
import Store
import TestSupport
import Testing
import Wire

/// Private rooms in the store (docs/DESIGN.md §3.7): holders write and read, a carrier stores
/// the ciphertext and refuses what its author could not sign with the room key, and a
/// passphrase change leaves old holders behind. Argon2id at its minimum cost (see `PrivateRoomTests`).
@Suite struct PrivateRoomStoreTests {
    let alice = Fixtures.identity(0)
    let bob = Fixtures.identity(1)
    let carol = Fixtures.identity(2)
    let mallory = Fixtures.identity(4)
    let now = Fixtures.now()
    let name = RoomName("night-ops")!

    func keys(_ passphrase: String) throws -> PrivateRoomKeys {
        try PrivateRoomKeys.derive(name: name, passphrase: Array(passphrase.utf8), cost: .minimum)
    }

    func post(_ text: String) -> OperationBody { .post(text: text, attachments: [], location: nil, replyTo: nil) }

    @Test func holdersReadEachOther_aCarrierHoldsCiphertextOnly_andRefusesAForgedRoomSignature() throws {
        let room = try keys("correct horse battery staple")
        let a = try Nodes.store(alice), b = try Nodes.store(bob), c = try Nodes.store(carol)
        try a.joinPrivateRoom(room)
        try b.joinPrivateRoom(room)
        let first = try a.author(post("the vault opens at 04:10"), in: room.descriptor.id, by: alice, nowMillis: now)
        try b.author(.react(target: first.id, emoji: "👍", on: true), in: room.descriptor.id, by: bob, nowMillis: now + 1)
        try b.author(.edit(target: first.id, text: "never mind"), in: room.descriptor.id, by: bob, nowMillis: now + 2)  // not his post
        try Nodes.sync([a, c])
        try Nodes.sync([c, b])
        try Nodes.sync([a, c])
        for store in [a, b] {
            let history = try store.views.history(room.descriptor.id)
            #expect(history.map(\.text) == ["the vault opens at 04:10"])
            #expect(history.first?.reactions == ["👍": [bob.id]])
            #expect(try store.privateRoom(named: name)?.id == room.descriptor.id)
        }
        // carol carries every op and reads none; she cannot name the room.
        #expect(try c.log.digest(room.descriptor.id) == a.log.digest(room.descriptor.id))
        #expect(try c.log.opCount(room.descriptor.id) == 3)
        #expect(try c.views.history(room.descriptor.id).isEmpty)
        #expect(try c.carrier.isCarried(room.descriptor.id))
        #expect(try c.privateRooms().isEmpty && c.privateRoomName(room.descriptor.id) == nil)

        // mallory, guessing, signs with the wrong room key: carol (a carrier) refuses it.
        let guess = try keys("a guess at the passphrase")
        let sealed = try EncryptedBody.seal(post("let me in").encoded, with: room.epochKey, type: .post, author: mallory.id)
        let hlc = HLC(raw: (now + 5) << 16)
        let forged = Operation.sign(
            type: .post, flags: .bodyEncrypted, partition: room.descriptor.id, seq: 1, prev: .zero, hlc: hlc,
            body: RoomSignature.body(sealed: sealed, keys: guess, author: mallory.id, seq: 1, prev: .zero, hlc: hlc, type: .post, flags: .bodyEncrypted),
            by: mallory)
        #expect(try c.apply(forged, nowMillis: now + 10) == .rejected(.rule(.roomSignature)))
        #expect(try a.apply(forged, nowMillis: now + 10) == .rejected(.rule(.roomSignature)))
        // A store that never joined cannot write there at all.
        #expect(throws: StoreError.self) { try c.author(post("hello?"), in: room.descriptor.id, by: carol, nowMillis: now + 20) }
        // Joining later reads what was carried.
        try c.joinPrivateRoom(room)
        #expect(try c.views.history(room.descriptor.id).map(\.text) == ["the vault opens at 04:10"])
        #expect(try !c.carrier.isCarried(room.descriptor.id))
    }

    @Test func passphraseChange_oldHoldersReadOnlyBefore_newHoldersReadAll() throws {
        let old = try keys("correct horse battery staple"), new = try keys("a much longer and newer passphrase")
        let a = try Nodes.store(alice), b = try Nodes.store(bob), d = try Nodes.store(carol)
        try a.joinPrivateRoom(old)
        try b.joinPrivateRoom(old)
        try a.author(post("before"), in: old.descriptor.id, by: alice, nowMillis: now)
        try Nodes.sync([a, b])
        let next = try a.changePrivateRoomPassphrase(old.descriptor.id, to: new, by: alice, nowMillis: now + 1)
        #expect(next.id == new.descriptor.id)
        #expect(try a.privateRoom(named: name)?.id == new.descriptor.id)
        try a.author(post("after"), in: new.descriptor.id, by: alice, nowMillis: now + 2)
        #expect(try a.views.history(new.descriptor.id).map(\.text) == ["before", Views.passphraseChangedText, "after"])
        #expect(throws: StoreError.self) { try a.changePrivateRoomPassphrase(new.descriptor.id, to: new, by: alice, nowMillis: now + 3) }

        try d.joinPrivateRoom(new)
        try Nodes.sync([a, b, d])
        try Nodes.sync([a, b, d])  // d learns the earlier epoch from the link, then fetches it
        #expect(try b.views.history(old.descriptor.id).map(\.text) == ["before", Views.passphraseChangedText])
        #expect(try b.views.history(new.descriptor.id).isEmpty)
        #expect(try b.privateRoom(named: name)?.id == old.descriptor.id)
        #expect(try d.views.history(new.descriptor.id).map(\.text) == ["before", Views.passphraseChangedText, "after"])
        #expect(try d.privateRoomChain(new.descriptor.id) == [old.descriptor.id, new.descriptor.id])
        // Pages forward and back cross the epochs as the whole history does.
        let chained = try d.views.history(new.descriptor.id)
        #expect(try d.views.history(new.descriptor.id, limit: 1, after: chained[0].id).map(\.text) == [Views.passphraseChangedText])
        #expect(try d.views.history(new.descriptor.id, after: chained[0].id).map(\.text) == [Views.passphraseChangedText, "after"])
        #expect(try d.views.history(new.descriptor.id, limit: 1, before: chained[2].id).map(\.text) == [Views.passphraseChangedText])
        // d reads the old epoch but cannot write there: the old room key stayed with the old passphrase.
        #expect(try d.privateRoom(named: name)?.id == new.descriptor.id)
        #expect(throws: StoreError.self) { try d.author(post("into the old epoch"), in: old.descriptor.id, by: carol, nowMillis: now + 4) }
        // A rebuild from the log gives the same views.
        try d.views.rebuildViews()
        #expect(try d.views.history(new.descriptor.id).map(\.text) == ["before", Views.passphraseChangedText, "after"])
    }

    /// A change with no history for new joiners: the new epoch's link carries no key, so a node
    /// that joins with the new passphrase reads only what follows; a holder of both reads all.
    @Test func passphraseChangeWithoutHistory_newJoinersReadOnlyWhatFollows() throws {
        let old = try keys("correct horse battery staple"), new = try keys("a much longer and newer passphrase")
        let a = try Nodes.store(alice), d = try Nodes.store(carol)
        try a.joinPrivateRoom(old)
        try a.author(post("before"), in: old.descriptor.id, by: alice, nowMillis: now)
        try a.changePrivateRoomPassphrase(old.descriptor.id, to: new, keepHistory: false, by: alice, nowMillis: now + 1)
        try a.author(post("after"), in: new.descriptor.id, by: alice, nowMillis: now + 2)
        #expect(try a.views.history(new.descriptor.id).map(\.text) == ["before", Views.passphraseChangedText, "after"])
        #expect(try a.privateRoomChain(new.descriptor.id) == [old.descriptor.id, new.descriptor.id])

        try d.joinPrivateRoom(new)
        try Nodes.sync([a, d])
        try Nodes.sync([a, d])
        #expect(try d.views.history(new.descriptor.id).map(\.text) == ["after"])
        #expect(try d.privateRoomChain(new.descriptor.id) == [new.descriptor.id])
        // d may carry the earlier epoch for others, as any peer may, but holds no name or key of it.
        #expect(try d.privateRoomName(old.descriptor.id) == nil)
        #expect(try d.keys.heldEpochs(old.descriptor.id).isEmpty)
        try d.views.rebuildViews()
        #expect(try d.views.history(new.descriptor.id).map(\.text) == ["after"])
    }
}
