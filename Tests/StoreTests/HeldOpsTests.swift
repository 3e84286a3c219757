import Replica
import Store
import TestSupport
import Testing

@Suite struct HeldOpsTests {
    let alice = Fixtures.identity(0)
    let lobby = PartitionDescriptor.room(RoomName("#Lobby")!)

    /// A push held already is a duplicate, a new one is applied, and a held header with another
    /// body is refused: alike on its own and inside a transaction of the node's (where the
    /// reads-first shortcut is skipped).
    @Test(arguments: [false, true])
    func applyUnlessHeld_answersAsApplyDoes_inAndOutOfATransaction(insideTransaction: Bool) throws {
        let store = try Fixtures.store(partitions: [lobby])
        var factory = OpFactory()
        let first = factory.make(post("one"), in: lobby.id, by: alice)
        let second = factory.make(post("two"), in: lobby.id, by: alice)
        #expect(try store.apply([first], nowMillis: Fixtures.now()) == [.applied])
        // Same length as "one", so the header still parses: only the body hash differs.
        let tampered = try Operation(header: first.header, body: post("owt").encoded)

        func outcomes() throws -> [[ApplyOutcome]] {
            try [[first], [second], [second], [tampered]].map { try store.applyUnlessHeld($0, nowMillis: Fixtures.now()) }
        }
        let answers = insideTransaction ? try store.inOneTransaction { try outcomes() } : try outcomes()
        #expect(answers == [[.duplicate], [.applied], [.duplicate], [.rejected(.invalid(.bodyHashMismatch))]])
        #expect(try store.views.history(lobby.id).map(\.text) == ["one", "two"])
    }
}
