import Discovery
import Identity
import Testing

/// Static peers from the peers file: always dialed, retried with backoff, never forgotten.
@Suite struct StaticPeerTests {
    let gateway = PeerEndpoint(host: "10.20.0.15", port: 7748)
    let keyless = PeerEndpoint(host: "10.20.0.16", port: 7748)

    @Test func staticPeers_addedBeforeStart_areDialedAtStart_whateverTheKeyOrder() {
        var discovery = Discovery(configuration: makeConfiguration())
        let added = discovery.addStaticPeers([StaticPeer(endpoint: gateway, key: smallerPeer), StaticPeer(endpoint: keyless)], now: 0)
        #expect(
            added == [
                .peerDiscovered(
                    PeerInfo(
                        id: smallerPeer, state: .discovered, origin: .staticFile, isStatic: true,
                        addresses: [gateway], since: 0, lastSeen: nil))
            ])
        #expect(
            discovery.start(now: 0).connects == [
                .connect(peer: smallerPeer, at: gateway),  // smaller key, dialed anyway: it may not know us
                .connect(peer: nil, at: keyless),
            ])
        #expect(discovery.diagnostics.staticPeers == 2)
    }

    @Test func staticPeers_addedWhileRunning_areDialedAtOnce_ownKeyAndRepeatsSkipped() {
        var discovery = startedDiscovery()
        let entries = [StaticPeer(endpoint: gateway, key: largerPeer), StaticPeer(endpoint: keyless, key: me)]
        #expect(discovery.addStaticPeers(entries, now: 10).connects == [.connect(peer: largerPeer, at: gateway)])
        #expect(discovery.addStaticPeers(entries, now: 20).decisions.isEmpty)
        #expect(discovery.peers.map(\.id) == [largerPeer])
    }

    @Test func unreachableStaticPeers_areRetriedWithBackoff_forever() {
        var shell = TestShell { $0.dialTimeout = 10_000_000 }  // only reported failures cause retries here
        shell.at(0) { discovery, now in discovery.addStaticPeers([StaticPeer(endpoint: keyless)], now: now) }
        shell.start(at: 0)
        var failures: [UInt64] = []
        for _ in 0..<8 {
            let failure = max(shell.connectTimes.last! + 100, shell.now)
            failures.append(failure)
            shell.at(failure) { discovery, now in discovery.onDialFailed(peer: nil, at: keyless, now: now) }
            shell.advance(to: failure + 30_000)
        }
        let gaps = zip(failures, shell.connectTimes.dropFirst()).map { $0.1 - $0.0 }
        #expect(gaps == [1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000])
        shell.advance(to: 10_000_000)
        #expect(shell.discovery.diagnostics.staticPeers == 1)
    }

    @Test func staticPeer_isNeverSuspectGoneOrForgotten_whenItsBeaconsStop() {
        var shell = TestShell()
        shell.start()
        shell.at(0) { discovery, now in discovery.addStaticPeers([StaticPeer(endpoint: gateway, key: largerPeer)], now: now) }
        var bob = FakePeer(largerPeer, host: PeerEndpoint(host: "10.20.0.15", port: 7747))
        shell.at(10) { discovery, now in discovery.hear(&bob, now: now) }
        shell.advance(to: 3_600_000)
        #expect(shell.discovery.peer(largerPeer)?.state == .discovered)
        #expect(!shell.decisions().contains(.peerForgotten(largerPeer)))
    }

    @Test func keylessStaticPeer_learnsItsKeyFromABeaconOfThatHostAndPort() {
        var discovery = startedDiscovery()
        _ = discovery.addStaticPeers([StaticPeer(endpoint: keyless)], now: 0)
        var alice = FakePeer(smallerPeer, host: PeerEndpoint(host: keyless.host, port: 7747))
        alice.tcpPort = keyless.port
        let heard = discovery.hear(&alice, now: 100)
        #expect(
            heard.decisions == [
                .peerDiscovered(
                    PeerInfo(
                        id: smallerPeer, state: .discovered, origin: .beacon, isStatic: true,
                        addresses: [keyless], since: 100, lastSeen: 100)),
                .connect(peer: smallerPeer, at: keyless),  // static: dialed although alice has the smaller key
            ])
        #expect(discovery.onTick(now: 60_000).connects.allSatisfy { $0 != .connect(peer: nil, at: keyless) })
        #expect(discovery.diagnostics.staticPeers == 1)
    }

    @Test func keylessStaticPeer_isNotBoundByAReplayedBeacon() {
        var discovery = startedDiscovery()
        _ = discovery.addStaticPeers([StaticPeer(endpoint: keyless)], now: 0)
        var alice = FakePeer(smallerPeer, host: lanHost(3))
        alice.tcpPort = keyless.port
        let captured = alice.beacon()
        _ = discovery.onBeacon(captured, from: alice.host, now: 10)
        _ = discovery.onBeacon(captured, from: PeerEndpoint(host: keyless.host, port: 7747), now: 20)  // spoofed source
        #expect(discovery.peer(smallerPeer)?.isStatic == false)
        #expect(discovery.onTick(now: 16_000).connects.contains(.connect(peer: nil, at: keyless)))
    }

    @Test func keylessStaticPeer_learnsItsKeyFromALinkDialedToIt() {
        var discovery = startedDiscovery()
        _ = discovery.addStaticPeers([StaticPeer(endpoint: keyless)], now: 0)
        let linked = discovery.onLinkEstablished(peer: smallerPeer, via: keyless, now: 50)
        #expect(
            linked.decisions == [
                .peerDiscovered(
                    PeerInfo(
                        id: smallerPeer, state: .linked, origin: .staticFile, isStatic: true,
                        addresses: [keyless], since: 50, lastSeen: 50))
            ])
        _ = discovery.onLinkLost(peer: smallerPeer, now: 1_000)
        #expect(discovery.onTick(now: 2_000).connects == [.connect(peer: smallerPeer, at: keyless)])
    }

    @Test func keylessStaticEntry_forAnAddressAlreadyHeard_joinsThatPeer() {
        var discovery = startedDiscovery()
        var bob = FakePeer(largerPeer, host: PeerEndpoint(host: keyless.host, port: 7747))
        _ = discovery.hear(&bob, now: 0)
        _ = discovery.addStaticPeers([StaticPeer(endpoint: keyless)], now: 10)
        #expect(discovery.peer(largerPeer)?.isStatic == true)
        #expect(discovery.diagnostics.staticPeers == 1)
    }
}
