import Foundation
import Identity
import NodeRuntime
import Replica
import Store
import TestSupport
import Testing

@testable import WebUI

/// The web API's reads run on a connection of their own (`ReadConnection`), beside the node's.
@Suite struct ReadConnectionTests {
    /// A read held open (a long page) does not hold up the node's writes; each read sees one
    /// state, with every write finished before it began; and nothing a read cached outlives the
    /// node's next write (a room left after it was read as joined).
    @Test func aLongRead_holdsUpNoWrite_andEachReadSeesTheWritesBeforeIt() async throws {
        let directory = TestDirectory("reads")
        defer { directory.remove() }
        var configuration = NodeConfiguration(dataDirectory: directory.path)
        configuration.listenHost = "127.0.0.1"
        configuration.listenPort = 0
        configuration.discoveryPort = nil
        let identity = Fixtures.identity(1)
        let node = Node(configuration: configuration, identity: identity, log: .silent)
        _ = try await node.start()
        let access = NodeAccess(node: node, identity: identity)
        defer { access.stopWatching() }
        let lobby = PartitionDescriptor.room(RoomName("lobby")!)
        @Sendable func post(_ text: String) async throws -> OpID {
            try await access.write { store in
                try store.log.ensurePartition(lobby, joined: true)
                return try store.author(.post(text: text, attachments: [], location: nil, replyTo: nil), in: lobby.id, by: identity, nowMillis: 1).id
            }
        }
        let first = try await post("one")
        #expect(try await access.read { try $0.views.history(lobby.id).map(\.id) } == [first])

        let (holding, release, readEnded) = (Flag(), Flag(), Flag())
        let held = Task {
            try await access.read { store -> [OpID] in
                defer { readEnded.set() }
                let before = try store.views.history(lobby.id).map(\.id)
                holding.set()
                // Held until the test lets go, at most 10 s (a read on the node's executor would
                // hold the write below that long, and the test fails rather than hangs).
                let deadline = ContinuousClock.now + .seconds(10)
                while !release.isSet, ContinuousClock.now < deadline { usleep(1_000) }
                #expect(try store.views.history(lobby.id).map(\.id) == before, "a read saw two states")
                return before
            }
        }
        #expect(await poll(timeout: .seconds(10)) { holding.isSet })
        let second = try await post("two")
        #expect(!readEnded.isSet, "the node's write waited for a web read to end")
        release.set()
        #expect(try await held.value == [first])
        #expect(try await access.read { try $0.views.history(lobby.id).map(\.id) } == [first, second])

        #expect(try await access.read { try $0.log.partition(lobby.id)?.joined } == true)
        try await access.write { try $0.log.setJoined(lobby.id, false) }
        #expect(try await access.read { try $0.log.partition(lobby.id)?.joined } == false, "a read kept a row from before the node's write")
        await node.stop()
    }
}
