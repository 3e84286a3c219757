import Identity
import LinkProtocol
import TestSupport
import Testing

@testable import NodeRuntime

/// A real link's keepalive, driven by the node's event loop timers (docs/ARCHITECTURE.md, *One
/// timer mechanism*): pings while the peer is silent, then the idle close.
@Suite struct LinkKeepaliveTests {
    @Test func aSilentPeer_isPingedEveryInterval_thenClosedAsIdle() async throws {
        let nodes = InProcessNodes()
        defer { nodes.removeFiles() }
        var configuration = nodes.configuration("victim")
        configuration.link.pingInterval = 200
        configuration.link.idleTimeout = 1_000
        let victim = Fixtures.identity(1)
        let (_, address) = try await nodes.start(configuration, identity: victim)
        let peer = try await Attacker.handshake(with: victim.id, at: "127.0.0.1", port: address.port, from: "127.0.0.1", as: Fixtures.identity(2))
        peer.answersPings = false
        try await peer.sendHello()
        let (messages, endedAt) = await peer.drain(until: .now + .seconds(20))
        peer.close()
        await nodes.stopAll()
        let pings = messages.filter { if case .ping = $0 { true } else { false } }.count
        print("LinkKeepaliveTests: \(pings) pings before the close")
        #expect(endedAt != nil, "the silent peer's link was not closed")
        #expect(messages.contains(.bye(.idle)), "no BYE idle: \(messages.map(Attacker.describe))")
        // Pings at 200, 400, 600 and 800 ms after the link was made, then the close at 1 s: three
        // pings or more before the BYE show the close did not come early (the messages are
        // counted, not timed: under load the test reads them late, all at once).
        #expect(pings >= 3)
    }
}
