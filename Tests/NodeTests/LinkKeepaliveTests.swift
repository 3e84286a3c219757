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
        let start = ContinuousClock.now
        try await peer.sendHello()
        let (messages, endedAt) = await peer.drain(until: .now + .seconds(20))
        peer.close()
        await nodes.stopAll()
        let pings = messages.filter { if case .ping = $0 { true } else { false } }.count
        let elapsed = endedAt.map { $0 - start }
        print("LinkKeepaliveTests: \(pings) pings, closed after \(elapsed.map { "\($0)" } ?? "never")")
        #expect(endedAt != nil, "the silent peer's link was not closed")
        #expect(messages.contains(.bye(.idle)), "no BYE idle: \(messages.map(Attacker.describe))")
        // Pings at 200, 400, 600 and 800 ms after the link was made: at least three arrive
        // before the close at 1 s, which never comes before the idle timeout.
        #expect(pings >= 3)
        #expect(elapsed.map { $0 >= .milliseconds(900) } ?? false)
    }
}
