import Discovery
import Identity
import Testing

/// Time-driven behaviour with a manual clock: the adaptive beacon interval, expiry, link
/// liveness, and reconnect backoff.
@Suite struct DiscoveryTimingTests {
    // MARK: Adaptive interval

    @Test func beaconInterval_isFastAtStart_thenDoublesToTheStableCeiling() {
        var shell = TestShell()
        shell.start()
        shell.advance(to: 80_000)
        let log = shell.beaconLog
        #expect(log.map(\.time) == Array(stride(from: 0, through: 9_000, by: 1_000)) + [10_000, 15_000, 25_000, 45_000, 75_000])
        #expect(log.map(\.interval) == Array(repeating: 1_000, count: 10) + [5_000, 10_000, 20_000, 30_000, 30_000])
    }

    @Test func beacons_announceTheTimeUntilTheNextOne() {
        var shell = TestShell()
        shell.start()
        shell.advance(to: 200_000)
        let log = shell.beaconLog
        for (beacon, next) in zip(log, log.dropFirst()) {
            #expect(next.time - beacon.time == UInt64(beacon.interval), "beacon at \(beacon.time)")
        }
    }

    @Test func beaconInterval_turnsFastAgain_whenANewPeerAppears_andOnlyThen() {
        var shell = TestShell()
        shell.start()
        shell.advance(to: 50_000)  // stable by now: last beacon at 45 s announced 30 s
        var alice = FakePeer(smallerPeer, host: lanHost(3))
        for time in stride(from: UInt64(50_000), through: 80_000, by: 1_000) {
            shell.at(time) { discovery, now in discovery.hear(&alice, now: now) }  // heard every second, new only once
        }
        let after = shell.beaconLog.filter { $0.time >= 50_000 }
        #expect(after.map(\.time) == Array(stride(from: 50_000, through: 60_000, by: 1_000)) + [65_000, 75_000])
        #expect(after.map(\.interval) == Array(repeating: 1_000, count: 10) + [5_000, 10_000, 20_000])
    }

    /// Nodes that start together: a newcomer with the smaller key dials us, and needs our beacon
    /// to do so, so it hears the next one a fifth of the fast interval after our last, not a
    /// whole interval later. A newcomer we dial ourselves changes nothing, and a stream of
    /// newcomers gets no more than one beacon per fifth of the interval.
    @Test func newcomerThatDialsUs_hearsUsWithinAFifthOfTheFastInterval_andAStreamCannotFloodUs() {
        var shell = TestShell()
        shell.start()  // beacons at 0
        var bob = FakePeer(largerPeer, host: lanHost(2))
        shell.at(50) { discovery, now in discovery.hear(&bob, now: now) }  // we dial bob
        shell.advance(to: 999)
        #expect(shell.beaconLog.map(\.time) == [0])

        var quick = TestShell()
        quick.start()
        var alice = FakePeer(smallerPeer, host: lanHost(3))
        quick.at(50) { discovery, now in discovery.hear(&alice, now: now) }  // alice dials us
        quick.advance(to: 999)
        #expect(quick.beaconLog.map(\.time) == [0, 200])

        var flooded = TestShell()
        flooded.start()
        for n in UInt64(1)...40 {  // a new smaller key every 25 ms
            var newcomer = FakePeer(user(n % 49 + 1), host: lanHost(Int(3 + n % 100)))
            newcomer.instance = InstanceID(raw: 0x1000 + n)
            flooded.at(n * 25) { discovery, now in discovery.hear(&newcomer, now: now) }
        }
        flooded.advance(to: 1_000)
        let times = flooded.beaconLog.map(\.time)
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 >= 200 }, "\(times)")
        #expect(times.count <= 6, "\(times)")
    }

    // MARK: Expiry

    @Test func silentPeer_isSuspectAfterTwoIntervals_goneAfterThree_thenForgotten() {
        var shell = TestShell()
        shell.start()
        var alice = FakePeer(smallerPeer, host: lanHost(3))
        shell.at(500) { discovery, now in discovery.hear(&alice, interval: 1_000, now: now) }
        shell.advance(to: 2_499)
        #expect(shell.discovery.peer(smallerPeer)?.state == .discovered)
        shell.advance(to: 700_000)
        #expect(shell.log.filter { !$0.directive.isRoutine && $0.time > 500 }.map(\.time) == [2_500, 3_500, 603_500])
        #expect(
            shell.decisions(in: 501...700_000) == [
                .peerStateChanged(smallerPeer, .suspect), .peerStateChanged(smallerPeer, .gone), .peerForgotten(smallerPeer),
            ])
    }

    /// By default state changes fall due on a one-second grid, so one tick handles every peer
    /// whose deadline passed within it: a peer announcing 250 ms turns suspect at 500 and gone
    /// at 750 by the rule, both noticed at 1,000.
    @Test func stateChangesFallOnTheGrid() {
        var shell = TestShell { $0.stateCheckGranularity = 1_000 }
        shell.start()
        var alice = FakePeer(smallerPeer, host: lanHost(3))
        shell.at(0) { discovery, now in discovery.hear(&alice, interval: 250, now: now) }
        shell.advance(to: 999)
        #expect(shell.discovery.peer(smallerPeer)?.state == .discovered)
        shell.advance(to: 1_000)
        #expect(shell.discovery.peer(smallerPeer)?.state == .gone)
    }

    @Test func expiry_followsTheIntervalThePeerAnnounced_clamped() {
        for (announced, goneAt) in [(30_000, 90_000), (1, 750), (4_000_000_000, 360_000)] as [(UInt32, UInt64)] {
            var shell = TestShell()
            shell.start()
            var alice = FakePeer(smallerPeer, host: lanHost(3))
            shell.at(0) { discovery, now in discovery.hear(&alice, interval: announced, now: now) }
            shell.advance(to: goneAt - 1)
            #expect(shell.discovery.peer(smallerPeer)?.state == .suspect, "interval \(announced)")
            shell.advance(to: goneAt)
            #expect(shell.discovery.peer(smallerPeer)?.state == .gone, "interval \(announced)")
        }
    }

    @Test func suspectPeer_heardAgain_isDiscoveredAgain_andGonePeerReturning_isNewsAgain() {
        var shell = TestShell()
        shell.start()
        var alice = FakePeer(smallerPeer, host: lanHost(3))
        shell.at(0) { discovery, now in discovery.hear(&alice, now: now) }
        shell.at(2_500) { discovery, now in discovery.hear(&alice, now: now) }
        shell.at(6_000) { discovery, now in discovery.hear(&alice, now: now) }
        #expect(
            shell.decisions() == [
                .peerDiscovered(
                    PeerInfo(
                        id: smallerPeer, state: .discovered, origin: .beacon, isStatic: false,
                        addresses: [alice.dialEndpoint], since: 0, lastSeen: 0)),
                .peerStateChanged(smallerPeer, .suspect), .peerStateChanged(smallerPeer, .discovered),
                .peerStateChanged(smallerPeer, .suspect), .peerStateChanged(smallerPeer, .gone),
                .peerStateChanged(smallerPeer, .discovered),
            ])
    }

    // MARK: Link liveness

    @Test func linkedPeer_withoutPings_turnsSuspectThenGone_andAPingRevivesIt() {
        var shell = TestShell()
        shell.start()
        var bob = FakePeer(largerPeer, host: lanHost(2))
        shell.at(0) { discovery, now in discovery.hear(&bob, now: now) }
        shell.at(100) { discovery, now in discovery.onLinkEstablished(peer: largerPeer, via: bob.dialEndpoint, now: now) }
        shell.at(15_100) { discovery, now in discovery.onLinkPing(peer: largerPeer, now: now) }
        shell.at(30_100) { discovery, now in discovery.onLinkPing(peer: largerPeer, now: now) }
        shell.advance(to: 60_099)
        #expect(shell.discovery.peer(largerPeer)?.state == .linked)
        shell.advance(to: 65_000)
        shell.at(65_000) { discovery, now in discovery.onLinkPing(peer: largerPeer, now: now) }
        shell.advance(to: 200_000)
        #expect(
            shell.log.filter { if case .peerStateChanged = $0.directive { true } else { false } }.map(\.time)
                == [100, 60_100, 65_000, 95_000, 110_000])
        #expect(
            shell.decisions(in: 100...200_000) == [
                .peerStateChanged(largerPeer, .linked), .peerStateChanged(largerPeer, .suspect),
                .peerStateChanged(largerPeer, .linked), .peerStateChanged(largerPeer, .suspect),
                .peerStateChanged(largerPeer, .gone),
            ])
    }

    // MARK: Reconnect

    @Test func reconnect_afterLinkLost_backsOff1_2_4_upTo30s_andResetsAfterALink() {
        var shell = TestShell()
        shell.start()
        var bob = FakePeer(largerPeer, host: lanHost(2))
        let failed = { (discovery: inout Discovery, now: UInt64) in discovery.onDialFailed(peer: largerPeer, at: bob.dialEndpoint, now: now) }
        shell.at(0) { discovery, now in discovery.hear(&bob, interval: 60_000, now: now) }  // heard for 2 minutes
        shell.at(100) { discovery, now in discovery.onLinkEstablished(peer: largerPeer, via: bob.dialEndpoint, now: now) }
        shell.at(1_000) { discovery, now in discovery.onLinkLost(peer: largerPeer, now: now) }
        for time: UInt64 in [2_100, 4_200, 8_300, 16_400, 32_500, 62_600] { shell.at(time, failed) }
        shell.at(92_700) { discovery, now in discovery.onLinkEstablished(peer: largerPeer, via: bob.dialEndpoint, now: now) }
        shell.at(93_000) { discovery, now in discovery.onLinkLost(peer: largerPeer, now: now) }
        shell.advance(to: 94_500)
        //                       first   +1 s    +2 s   +4 s   +8 s    +16 s   +30 s   +30 s   after reset: +1 s
        #expect(shell.connectTimes == [0, 2_000, 4_100, 8_200, 16_300, 32_400, 62_500, 92_600, 94_000])
        #expect(shell.decisions(in: 94_000...94_000) == [.connect(peer: largerPeer, at: bob.dialEndpoint)])
    }

    @Test func reconnect_isNotAttempted_whenThePeerIsNoLongerHeard() {
        var shell = TestShell()
        shell.start()
        var bob = FakePeer(largerPeer, host: lanHost(2))
        shell.at(0) { discovery, now in discovery.hear(&bob, now: now) }
        shell.at(100) { discovery, now in discovery.onLinkEstablished(peer: largerPeer, via: bob.dialEndpoint, now: now) }
        shell.at(10_000) { discovery, now in discovery.onLinkPing(peer: largerPeer, now: now) }
        let lost = shell.at(20_000) { discovery, now in discovery.onLinkLost(peer: largerPeer, now: now) }
        shell.advance(to: 120_000)
        #expect(lost.decisions == [.peerStateChanged(largerPeer, .gone)])  // last beacon long ago
        #expect(shell.connectTimes == [0])
    }

    @Test func reconnect_byTheLargerKey_waitsForTheFallbackDelay() {
        var shell = TestShell()
        shell.start()
        var alice = FakePeer(smallerPeer, host: lanHost(3))
        shell.at(0) { discovery, now in discovery.hear(&alice, interval: 60_000, now: now) }
        shell.at(100) { discovery, now in discovery.onLinkEstablished(peer: smallerPeer, via: nil, now: now) }
        shell.at(1_000) { discovery, now in discovery.onLinkLost(peer: smallerPeer, now: now) }
        shell.advance(to: 30_000)
        #expect(shell.connectTimes == [16_000])  // alice had 15 s to dial us back first
    }

    @Test func dialWithoutOutcome_isRetriedAfterTheDialTimeout() {
        var shell = TestShell()
        shell.start()
        var bob = FakePeer(largerPeer, host: lanHost(2))
        for time in stride(from: UInt64(0), through: 31_000, by: 1_000) {
            shell.at(time) { discovery, now in discovery.hear(&bob, now: now) }
        }
        #expect(shell.connectTimes == [0, 15_000, 30_000])
    }

    @Test func dialFailure_triesTheNextAddress() {
        var discovery = startedDiscovery()
        var wired = FakePeer(largerPeer, host: lanHost(2))
        var wireless = wired
        wireless.host = PeerEndpoint(host: "10.88.0.2", port: 7747)
        wireless.seq = 1_000  // the same instance, beaconing on its other interface too
        #expect(discovery.hear(&wired, now: 0).connects == [.connect(peer: largerPeer, at: wired.dialEndpoint)])
        _ = discovery.hear(&wireless, interval: 60_000, now: 10)
        _ = discovery.onDialFailed(peer: largerPeer, at: wired.dialEndpoint, now: 20)
        #expect(discovery.onTick(now: 1_020).connects == [.connect(peer: largerPeer, at: wireless.dialEndpoint)])
        _ = discovery.onDialFailed(peer: largerPeer, at: wireless.dialEndpoint, now: 1_030)
        #expect(discovery.onTick(now: 3_030).connects == [.connect(peer: largerPeer, at: wired.dialEndpoint)])
    }

    @Test func tickRequests_areEmittedOnlyWhenTheDeadlineChanges() {
        var discovery = Discovery(configuration: makeConfiguration())
        #expect(discovery.start(now: 0).tickRequests == [1_000])
        var bob = FakePeer(largerPeer, host: lanHost(2))
        #expect(discovery.hear(&bob, now: 200).tickRequests.isEmpty)  // we dial bob; the beacon at 1 s comes first
        #expect(discovery.onTick(now: 1_000).tickRequests == [1_000])
        var alice = FakePeer(smallerPeer, host: lanHost(3))
        #expect(discovery.hear(&alice, now: 1_100).tickRequests == [100])  // alice dials us: our next beacon at 1.2 s, not 2 s
    }
}

extension DiscoveryDirective {
    /// Beacons and tick requests: the instance's routine, not decisions.
    var isRoutine: Bool {
        switch self {
        case .sendBeacon, .scheduleTick: true
        default: false
        }
    }
}
