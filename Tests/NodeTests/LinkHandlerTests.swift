import Discovery
import Foundation
import Identity
import LinkProtocol
import Synchronization
import TestSupport
import Testing

@testable import NodeRuntime

/// The Gossip seam, in process: two `Node` actors linked over loopback through a static peer,
/// with handlers that record what the node tells them.
@Suite struct LinkHandlerTests {
    /// Records link events and sync frames; rejects type 0x07 to test violations.
    final class RecordingHandler: LinkMessageHandler, Sendable {
        struct Record: Sendable {
            var opened: [UserID] = []
            var closed: [UserID] = []
            var frames: [SyncFrame] = []
            /// For each frame, how many links had opened when it came (1: the first link).
            var frameLinks: [Int] = []

            /// The payloads of the frames that came over the first link.
            var firstLinkPayloads: [[UInt8]] { zip(frames, frameLinks).filter { $0.1 == 1 }.map(\.0.payload) }
        }

        let record = Mutex(Record())

        func linkOpened(_ peer: LinkPeer, node: isolated Node) { record.withLock { $0.opened.append(peer.id) } }

        func received(_ frame: SyncFrame, from peer: LinkPeer, node: isolated Node) throws(LinkViolation) {
            if frame.type == 0x07 { throw LinkViolation("type 0x07 is not welcome here") }
            record.withLock {
                $0.frames.append(frame)
                $0.frameLinks.append($0.opened.count)
            }
        }

        func linkClosed(_ peer: LinkPeer, node: isolated Node) { record.withLock { $0.closed.append(peer.id) } }

        var snapshot: Record { record.withLock { $0 } }
    }

    static func pollAsync(timeout: Duration, _ condition: () async -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return await condition()
    }

    func configuration(_ directory: String) -> NodeConfiguration {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var configuration = NodeConfiguration(dataDirectory: directory)
        configuration.listenHost = "127.0.0.1"
        configuration.listenPort = 0
        configuration.discoveryPort = nil
        return configuration
    }

    @Test func syncFrames_reachThePeersHandler_inOrder_betweenOpenedAndClosed() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("parley-node-inproc-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let alice = Fixtures.identity(21), bob = Fixtures.identity(22)
        let aliceHandler = RecordingHandler(), bobHandler = RecordingHandler()
        let aliceNode = Node(configuration: configuration(root + "/alice"), identity: alice, log: .silent, handler: aliceHandler)
        let aliceAddress = try await aliceNode.start()
        var bobConfiguration = configuration(root + "/bob")
        bobConfiguration.staticPeers = [StaticPeer(endpoint: PeerEndpoint(host: "127.0.0.1", port: aliceAddress.port), key: alice.id)]
        let bobNode = Node(configuration: bobConfiguration, identity: bob, log: .silent, handler: bobHandler)
        try await bobNode.start()

        // Generous bounds: in a full parallel run, CPU-heavy tests may hold the pool's threads.
        let linked = await Self.pollAsync(timeout: .seconds(30)) {
            aliceHandler.snapshot.opened == [bob.id] && bobHandler.snapshot.opened == [alice.id]
        }
        try #require(linked)
        #expect(await aliceNode.linkedPeers == [bob.id])

        for index in 0..<50 { #expect(await bobNode.send(SyncFrame(type: 0x05, payload: [UInt8(index)]), to: alice.id)) }
        #expect(await Self.pollAsync(timeout: .seconds(30)) { aliceHandler.snapshot.frames.count == 50 })
        #expect(aliceHandler.snapshot.frames.map(\.payload) == (0..<50).map { [UInt8($0)] }, "frames arrive in order")
        #expect(await aliceNode.send(SyncFrame(type: 0x02, payload: []), to: Fixtures.identity(99).id) == false, "no link, no send")

        // A frame the handler refuses closes the link on both sides. Sent in one burst with frames
        // before and after it (one read, one batch on alice's side): those before still arrive, in
        // order, and none after it on that link. (Bob dials his static peer again, and under load a
        // new link can open before his last sends: what they carry over it is not this link's.)
        for index in 50..<60 { #expect(await bobNode.send(SyncFrame(type: 0x05, payload: [UInt8(index)]), to: alice.id)) }
        #expect(await bobNode.send(SyncFrame(type: 0x07, payload: [1]), to: alice.id))
        for index in 60..<70 { _ = await bobNode.send(SyncFrame(type: 0x05, payload: [UInt8(index)]), to: alice.id) }
        let closed = await Self.pollAsync(timeout: .seconds(30)) {
            aliceHandler.snapshot.closed.contains(bob.id) && bobHandler.snapshot.closed.contains(alice.id)
        }
        #expect(closed)
        #expect(aliceHandler.snapshot.firstLinkPayloads == (0..<60).map { [UInt8($0)] })
        let doctor = await aliceNode.doctor()
        #expect(doctor.admission.violations >= 1)

        await bobNode.stop()
        await aliceNode.stop()
        #expect(!FileManager.default.fileExists(atPath: root + "/alice/control.sock"))
    }
}
