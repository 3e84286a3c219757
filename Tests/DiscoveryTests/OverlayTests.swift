import Discovery
import Identity
import Testing

/// The bounded-degree overlay (docs/DESIGN.md §4.1.2): a few peers stay a full mesh under the
/// key-order rule; many are linked through `activeSize` random picks, replaced when lost,
/// swapped now and then, with links others dial refused past `maxLinks` unless pinned.
@Suite struct OverlayTests {
    /// `count` peers on the LAN, ids 100, 101, … (all larger than ours, 50) and a few smaller.
    func peers(_ count: Int) -> [FakePeer] {
        (0..<count).map { FakePeer(user(UInt64($0 < 3 ? 10 + $0 : 100 + $0)), host: lanHost(10 + $0)) }
    }

    func shell(activeSize: Int, maxLinks: Int? = nil, rotation: UInt64 = 600_000, seed: UInt64 = 7) -> TestShell {
        var shell = TestShell {
            $0.overlay = OverlayConfiguration(activeSize: activeSize, maxLinks: maxLinks, rotationInterval: rotation)
            $0.randomSeed = seed
        }
        shell.start()
        return shell
    }

    /// Delivers a beacon of each peer at `time`, announcing `interval`.
    func hearAll(_ shell: inout TestShell, _ peers: inout [FakePeer], at time: UInt64, interval: UInt32 = 1_000) {
        for index in peers.indices {
            shell.at(time) { discovery, now in discovery.hear(&peers[index], interval: interval, now: now) }
        }
    }

    func dialed(_ directives: [DiscoveryDirective]) -> [UserID] {
        directives.compactMap { if case .connect(let peer?, _) = $0 { peer } else { nil } }
    }

    func disconnected(_ directives: [DiscoveryDirective]) -> [UserID] {
        directives.compactMap { if case .disconnect(let peer) = $0 { peer } else { nil } }
    }

    @Test func withAtMostActiveSizePeers_everyPeerIsLinkedByTheKeyOrderRule() {
        var shell = shell(activeSize: 8)
        var lan = peers(6)
        hearAll(&shell, &lan, at: 100)
        let dials = Set(dialed(shell.decisions()))
        #expect(dials == Set(lan.map(\.id).filter { $0 > me }), "the larger keys are ours to dial, as in the full mesh")
    }

    @Test func withManyPeers_itDialsActiveSizeRandomPicks_theSameForTheSameSeed() {
        func picks(seed: UInt64) -> [UserID] {
            var shell = shell(activeSize: 4, seed: seed)
            var lan = peers(30)
            hearAll(&shell, &lan, at: 100)
            return dialed(shell.decisions())
        }
        let first = picks(seed: 7)
        #expect(first.count == 4 && Set(first).count == 4, "four picks, each dialed once: \(first)")
        #expect(picks(seed: 7) == first, "the same seed, the same picks")
        let others = (1...5).map { Set(picks(seed: $0)) }
        #expect(Set(others).count > 1, "other seeds pick others")
    }

    @Test func aLostPick_isReplacedByAnother_andAFailedDialToo() throws {
        var shell = shell(activeSize: 3)
        var lan = peers(20)
        hearAll(&shell, &lan, at: 100)
        let picks = dialed(shell.decisions())
        #expect(picks.count == 3)
        for (index, peer) in picks.enumerated() {
            let endpoint = try #require(lan.first { $0.id == peer }?.dialEndpoint)
            shell.at(200 + UInt64(index)) { discovery, now in discovery.onLinkEstablished(peer: peer, via: endpoint, now: now) }
        }
        let lost = shell.at(1_000) { discovery, now in discovery.onLinkLost(peer: picks[0], now: now) }
        let replacement = dialed(lost)
        #expect(replacement.count == 1 && !picks.contains(replacement[0]), "one new pick: \(replacement)")
        let endpoint = try #require(lan.first { $0.id == replacement[0] }?.dialEndpoint)
        let failed = shell.at(1_100) { discovery, now in discovery.onDialFailed(peer: replacement[0], at: endpoint, now: now) }
        let next = dialed(failed)
        #expect(next.count == 1 && next[0] != replacement[0] && !picks.contains(next[0]), "another pick: \(next)")
    }

    @Test func linksOthersDialPastMaxLinks_areRefused_butPinnedAndStaticPeersAreNot() throws {
        var shell = shell(activeSize: 2, maxLinks: 3)
        var lan = peers(20)
        hearAll(&shell, &lan, at: 100)
        let picks = dialed(shell.decisions())
        for peer in picks {
            let endpoint = try #require(lan.first { $0.id == peer }?.dialEndpoint)
            shell.at(200) { discovery, now in discovery.onLinkEstablished(peer: peer, via: endpoint, now: now) }
        }
        let others = lan.map(\.id).filter { !picks.contains($0) }
        let firstInbound = shell.at(300) { discovery, now in discovery.onLinkEstablished(peer: others[0], via: nil, now: now) }
        #expect(disconnected(firstInbound).isEmpty, "three links: within the bound")
        let secondInbound = shell.at(301) { discovery, now in discovery.onLinkEstablished(peer: others[1], via: nil, now: now) }
        #expect(disconnected(secondInbound) == [others[1]], "a fourth link is refused")
        shell.at(302) { discovery, now in discovery.onLinkLost(peer: others[1], now: now) }
        _ = shell.at(303) { discovery, now in discovery.pin([others[2]], now: now) }
        let pinned = shell.at(304) { discovery, now in discovery.onLinkEstablished(peer: others[2], via: nil, now: now) }
        #expect(disconnected(pinned).isEmpty, "a pinned peer is kept on top")
        #expect(shell.discovery.overlaySnapshot.refused == 1)
    }

    @Test func everyRotation_swapsOnePickForAFreshOne() throws {
        var shell = shell(activeSize: 2, rotation: 10_000)
        var lan = peers(20)
        hearAll(&shell, &lan, at: 100)
        var linked: Set<UserID> = []
        var time: UInt64 = 200
        var swaps = 0
        // Links come up for every dial; the overlay drops one of its picks at each rotation.
        while time < 200_000 {
            for peer in dialed(shell.log.filter { $0.time >= time - 100 && $0.time < time }.map(\.directive)) where !linked.contains(peer) {
                let endpoint = try #require(lan.first { $0.id == peer }?.dialEndpoint)
                shell.at(time) { discovery, now in discovery.onLinkEstablished(peer: peer, via: endpoint, now: now) }
                linked.insert(peer)
            }
            let emitted = shell.advance(to: time + 100)
            for peer in disconnected(emitted) {
                shell.at(time + 100) { discovery, now in discovery.onLinkLost(peer: peer, now: now) }
                linked.remove(peer)
                swaps += 1
            }
            // Keep the peers heard (every 10 s) and the links alive, as beacons and pings would.
            if time % 10_000 == 0 { hearAll(&shell, &lan, at: time + 100, interval: 10_000) }
            if time % 1_000 == 0 {
                for peer in linked { shell.at(time + 100) { discovery, now in discovery.onLinkPing(peer: peer, now: now) } }
            }
            time += 100
        }
        #expect(swaps >= 5, "rotations swapped picks: \(swaps)")
        #expect(linked.count >= 2 && linked.count <= 3, "links stay near the active size: \(linked.count)")
    }
}
