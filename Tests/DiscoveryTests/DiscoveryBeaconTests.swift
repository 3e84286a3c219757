import Discovery
import Identity
import Testing
import Wire

/// Receiving beacons: who gets into the peer table, who gets dialed, and what is dropped.
@Suite struct DiscoveryBeaconTests {
    @Test func start_sendsOneBeaconToEveryTarget_andAsksForATick() throws {
        let loopback = PeerEndpoint(host: "127.255.255.255", port: 7747)
        var discovery = Discovery(configuration: makeConfiguration { $0.targets = [lanBroadcast, loopback] })
        let directives = discovery.start(now: 1_000)
        let beacons = directives.sentBeacons
        #expect(beacons.map(\.seq) == [1, 2])
        #expect(beacons.allSatisfy { $0.identity == me && $0.tcpPort == 7748 && $0.interval == 1_000 && !$0.isLeaving })
        #expect(directives.count == 3)
        guard case .sendBeacon(_, let first) = directives[0], case .sendBeacon(_, let second) = directives[1] else {
            Issue.record("expected two beacons first, got \(directives)")
            return
        }
        #expect([first, second] == [lanBroadcast, loopback])
        #expect(directives.last == .scheduleTick(after: 1_000))
    }

    @Test func onBeacon_fromUnknownLargerKey_reportsAndDialsIt() {
        var discovery = startedDiscovery()
        var bob = FakePeer(largerPeer, host: lanHost(2))
        let directives = discovery.hear(&bob, now: 100)
        #expect(
            directives.decisions == [
                .peerDiscovered(
                    PeerInfo(
                        id: largerPeer, state: .discovered, origin: .beacon, isStatic: false,
                        addresses: [bob.dialEndpoint], since: 100, lastSeen: 100)),
                .connect(peer: largerPeer, at: bob.dialEndpoint),
            ])
    }

    @Test func onBeacon_fromUnknownSmallerKey_waitsToBeDialed_thenDialsAfterTheFallbackDelay() {
        var shell = TestShell()
        shell.start()
        var alice = FakePeer(smallerPeer, host: lanHost(3))
        let first = shell.at(100) { discovery, now in discovery.hear(&alice, now: now) }
        #expect(first.decisions.count == 1)
        #expect(first.connects.isEmpty)
        for time in stride(from: UInt64(1_100), through: 20_100, by: 1_000) {
            shell.at(time) { discovery, now in discovery.hear(&alice, now: now) }
        }
        // The smaller key never dialed us: after 15 s unlinked, we dial (one-way reachability).
        #expect(shell.connectTimes == [15_100])
    }

    @Test func onBeacon_fromUnknownSmallerKey_withoutFallback_isNeverDialed() {
        var shell = TestShell { $0.fallbackDialDelay = nil }
        shell.start()
        var alice = FakePeer(smallerPeer, host: lanHost(3))
        for time in stride(from: UInt64(0), through: 60_000, by: 1_000) {
            shell.at(time) { discovery, now in discovery.hear(&alice, now: now) }
        }
        #expect(shell.connectTimes.isEmpty)
        #expect(shell.discovery.peer(smallerPeer)?.state == .discovered)
    }

    @Test func onBeacon_replayedOrOlderSeq_isIgnoredAndCounted() {
        var discovery = startedDiscovery()
        var alice = FakePeer(smallerPeer, host: lanHost(3))
        let older = alice.beacon()
        let newer = alice.beacon()
        _ = discovery.onBeacon(newer, from: alice.host, now: 10)
        #expect(discovery.onBeacon(newer, from: alice.host, now: 20).isEmpty)
        #expect(discovery.onBeacon(older, from: alice.host, now: 30).isEmpty)
        #expect(discovery.onBeacon(newer, from: lanHost(66), now: 40).isEmpty)  // replayed from elsewhere
        #expect(discovery.diagnostics.replayed == 3)
        #expect(discovery.diagnostics.accepted == 1)
        #expect(discovery.peer(smallerPeer)?.lastSeen == 10)
        #expect(discovery.peer(smallerPeer)?.addresses == [alice.dialEndpoint])
    }

    @Test func onBeacon_ownEcho_isIgnoredAndCounted() throws {
        var discovery = Discovery(configuration: makeConfiguration())
        guard case .sendBeacon(let own, _) = discovery.start(now: 0).first else {
            Issue.record("start sent no beacon")
            return
        }
        #expect(discovery.onBeacon(own, from: lanHost(1), now: 5).isEmpty)
        #expect(discovery.diagnostics.ownBeaconsHeard == 1)
        #expect(discovery.peers.isEmpty)
    }

    @Test func onBeacon_ownIdentityFromAnotherInstance_reportsDuplicateIdentityOnce() {
        var discovery = startedDiscovery()
        var twin = FakePeer(me, host: lanHost(4))
        twin.instance = InstanceID(raw: 0xBBBB)
        #expect(discovery.hear(&twin, now: 10) == [.duplicateIdentity(twin.dialEndpoint)])
        #expect(discovery.hear(&twin, now: 1_010).isEmpty)
        twin.instance = InstanceID(raw: 0xCCCC)  // it restarted: a new twin, reported again
        #expect(discovery.hear(&twin, now: 2_010) == [.duplicateIdentity(twin.dialEndpoint)])
        #expect(discovery.diagnostics.duplicateIdentity == 3)
        #expect(discovery.peers.isEmpty)
    }

    @Test func onBeacon_fromRestartedPeer_isAcceptedDespiteLowerSeq() {
        var discovery = startedDiscovery()
        var bob = FakePeer(largerPeer, host: lanHost(2))
        for time: UInt64 in [0, 1_000, 2_000] { _ = discovery.hear(&bob, now: time) }
        let oldInstanceBeacon = bob.beacon()
        bob.instance = InstanceID(raw: 0xF00D)
        bob.seq = 0
        _ = discovery.hear(&bob, now: 3_000)
        #expect(discovery.diagnostics.accepted == 4)
        #expect(discovery.peer(largerPeer)?.lastSeen == 3_000)
        // The old instance's beacons are still filtered by their own seq.
        _ = discovery.onBeacon(oldInstanceBeacon, from: bob.host, now: 3_500)
        _ = discovery.onBeacon(oldInstanceBeacon, from: bob.host, now: 3_600)
        #expect(discovery.diagnostics.replayed == 1)
    }

    @Test func onBeacon_leaving_marksThePeerGoneAtOnce_andItIsNotDialed() {
        var shell = TestShell()
        shell.start()
        var bob = FakePeer(largerPeer, host: lanHost(2))
        shell.at(100) { discovery, now in discovery.hear(&bob, now: now) }
        shell.at(150) { discovery, now in discovery.onDialFailed(peer: largerPeer, at: bob.dialEndpoint, now: now) }
        let leaving = shell.at(200) { discovery, now in discovery.hear(&bob, leaving: true, now: now) }
        #expect(leaving.decisions == [.peerStateChanged(largerPeer, .gone)])
        shell.advance(to: 599_000)
        #expect(shell.connectTimes == [100])
        #expect(shell.discovery.peer(largerPeer)?.state == .gone)
        shell.advance(to: 600_200)
        #expect(shell.decisions(in: 600_200...600_200) == [.peerForgotten(largerPeer)])
        #expect(shell.discovery.peers.isEmpty)
    }

    @Test func onBeacon_leavingOfAReplacedInstance_isIgnored() {
        var discovery = startedDiscovery()
        var oldRun = FakePeer(largerPeer, host: lanHost(2))
        var newRun = oldRun
        newRun.instance = InstanceID(raw: 0xF00D)
        _ = discovery.hear(&oldRun, now: 0)
        _ = discovery.hear(&newRun, now: 500)
        let late = discovery.hear(&oldRun, leaving: true, now: 600)  // the old process's goodbye, delayed
        #expect(late.decisions.isEmpty)
        #expect(discovery.peer(largerPeer)?.state == .discovered)
    }

    @Test func onBeacon_fromTwoAddresses_keepsBoth_latestFirst() {
        var discovery = startedDiscovery()
        var wired = FakePeer(largerPeer, host: lanHost(2))
        _ = discovery.hear(&wired, now: 0)
        var wireless = wired
        wireless.host = PeerEndpoint(host: "10.88.0.2", port: 7747)
        _ = discovery.hear(&wireless, now: 10)
        #expect(discovery.peer(largerPeer)?.addresses == [wireless.dialEndpoint, wired.dialEndpoint])
    }

    @Test func onBeacon_rejected_isCountedPerReason_withItsSource() {
        var discovery = startedDiscovery()
        var stranger = FakePeer(largerPeer, host: lanHost(8))
        stranger.key = otherBeaconKey
        #expect(discovery.hear(&stranger, now: 0).isEmpty)
        #expect(discovery.hear(&stranger, now: 1).isEmpty)
        #expect(discovery.onBeacon(Array("hello".utf8), from: lanHost(9), now: 2).isEmpty)
        let diagnostics = discovery.diagnostics
        #expect(diagnostics.rejected[.badMAC] == .init(count: 2, lastSource: lanHost(8)))
        #expect(diagnostics.rejected[.badMagic] == .init(count: 1, lastSource: lanHost(9)))
        #expect(diagnostics.rejectedTotal == 3)
        #expect(diagnostics.sources.map(\.host) == ["10.77.0.8", "10.77.0.9"])
        #expect(diagnostics.sources.map(\.rejected) == [2, 1])
        #expect(discovery.peers.isEmpty)
    }

    @Test func beforeStartAndAfterStop_beaconsAreIgnored() {
        var discovery = Discovery(configuration: makeConfiguration())
        var bob = FakePeer(largerPeer, host: lanHost(2))
        #expect(discovery.hear(&bob, now: 0).isEmpty)
        _ = discovery.start(now: 0)
        _ = discovery.stop(now: 10)
        #expect(discovery.hear(&bob, now: 20).isEmpty)
        #expect(discovery.onTick(now: 30).isEmpty)
        #expect(discovery.peers.isEmpty)
    }

    @Test func stop_sendsALeavingBeaconToEveryTarget() {
        let loopback = PeerEndpoint(host: "127.255.255.255", port: 7747)
        var discovery = Discovery(configuration: makeConfiguration { $0.targets = [lanBroadcast, loopback] })
        _ = discovery.start(now: 0)
        let directives = discovery.stop(now: 500)
        #expect(directives.count == 2)
        #expect(directives.sentBeacons.map(\.isLeaving) == [true, true])
        #expect(directives.sentBeacons.map(\.seq) == [3, 4])
        #expect(discovery.stop(now: 600).isEmpty)
    }
}
