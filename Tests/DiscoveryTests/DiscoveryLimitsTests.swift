import Discovery
import Identity
import TestSupport
import Testing
import Wire

/// Floods: per-source rate limits and a bounded peer table keep CPU and memory flat.
@Suite struct DiscoveryLimitsTests {
    @Test func floodFromOneSource_isRateLimitedAndCounted_whileAnotherSourceGetsThrough() {
        var discovery = startedDiscovery()
        var flooder = FakePeer(largerPeer, host: lanHost(6))
        for _ in 0..<1_000 { _ = discovery.hear(&flooder, now: 1_000) }
        #expect(discovery.diagnostics.accepted == 20)  // the burst
        #expect(discovery.diagnostics.rateLimited == 980)

        var calm = FakePeer(user(91), host: lanHost(7))
        _ = discovery.hear(&calm, now: 1_000)
        #expect(discovery.peer(user(91)) != nil)
        #expect(discovery.diagnostics.accepted == 21)

        // One second later the flooder has earned ten more beacons, no more.
        for _ in 0..<1_000 { _ = discovery.hear(&flooder, now: 2_000) }
        #expect(discovery.diagnostics.accepted == 31)
        let sources = discovery.diagnostics.sources
        #expect(sources.first { $0.host == "10.77.0.6" }?.heard == 2_000)
        #expect(sources.first { $0.host == "10.77.0.6" }?.rateLimited == 1_970)
        #expect(sources.first { $0.host == "10.77.0.7" }?.rateLimited == 0)
    }

    @Test func beaconsClaimingARestartEachTime_getOneDialASecond_notOnePerBeacon() {
        // Found by AbuseProcessTests' beacon flood: a fresh instance id reads as a restart, and a
        // restart used to clear the backoff, so each forged beacon made the node dial once.
        var discovery = startedDiscovery()
        var forger = FakePeer(largerPeer, host: PeerEndpoint(host: "127.0.0.9", port: 7747))  // loopback: no rate limit
        var dials = 0
        for index in 0..<100 {
            let now = UInt64(1_000 + index * 10)
            forger.instance = InstanceID(raw: UInt64(index + 1))
            for case .connect(let peer, let endpoint) in discovery.hear(&forger, now: now) {
                dials += 1
                _ = discovery.onDialFailed(peer: peer, at: endpoint, now: now)  // refused at once
            }
        }
        #expect(dials == 1, "100 beacons in one second, each with a new instance id, made \(dials) dials")
    }

    /// Every new identity asks for a dial, and identities cost nothing: dials are budgeted
    /// (burst, then a steady rate), and a peer linked before gets the first dial when they are
    /// short. Before the budget, 200 made-up identities meant 200 connections at once.
    @Test func aFloodOfNewIdentities_isDialedWithinTheBudget_andAPeerLinkedBeforeComesFirst() {
        var discovery = startedDiscovery {
            $0.dialsPerSecond = 10; $0.dialBurst = 20
        }
        let returning = user(1_000)  // the largest key: last in key order
        var friend = FakePeer(returning, host: lanHost(2))
        _ = discovery.hear(&friend, interval: 60_000, now: 0)
        _ = discovery.onLinkEstablished(peer: returning, via: friend.dialEndpoint, now: 0)
        _ = discovery.onLinkLost(peer: returning, now: 0)  // redial due after the first backoff (1 s)
        var connects: [(UInt64, UserID?)] = []
        func note(_ directives: [DiscoveryDirective], at now: UInt64) {
            for case .connect(let peer, _) in directives { connects.append((now, peer)) }
        }
        for index in 0..<200 {
            var forger = FakePeer(user(100 + UInt64(index)), host: PeerEndpoint(host: "127.0.0.9", port: 7747))  // loopback: no beacon limit
            note(discovery.hear(&forger, now: 500), at: 500)
        }
        #expect(connects.count == 20, "the burst: \(connects.count) dials at once")
        #expect(discovery.diagnostics.dialsDeferred > 0)

        // The returning peer's redial falls due while the budget is empty: it gets the next dial.
        for now in stride(from: UInt64(510), through: 3_000, by: 10) { note(discovery.tick(at: [now]), at: now) }
        let later = connects.dropFirst(20)
        #expect(later.first { $0.0 >= 1_000 }?.1 == returning, "\(later.prefix(3).map { "\($0.0) \($0.1?.text.prefix(12) ?? "-")" })")
        #expect((20...26).contains(later.count), "\(later.count) dials in 2.5 s at 10 a second")
    }

    @Test func loopbackSources_areNotRateLimited_unlessConfigured() {
        var lab = startedDiscovery()
        var local = FakePeer(largerPeer, host: PeerEndpoint(host: "127.0.0.1", port: 7747))
        for _ in 0..<100 { _ = lab.hear(&local, now: 1_000) }
        #expect(lab.diagnostics.rateLimited == 0)
        #expect(lab.diagnostics.accepted == 100)

        var strict = startedDiscovery { $0.exemptLoopbackFromRateLimit = false }
        for _ in 0..<100 { _ = strict.hear(&local, now: 1_000) }
        #expect(strict.diagnostics.rateLimited == 80)
    }

    @Test func floodOfRandomIdentities_keepsTheTableBounded_andKeepsLinkedAndStaticPeers() {
        let seed = freshSeed()
        var random = SeededRandom(seed: seed)
        var discovery = startedDiscovery {
            $0.maxPeers = 64; $0.maxSources = 128
        }
        let fixed = PeerEndpoint(host: "10.99.0.1", port: 7748)
        _ = discovery.addStaticPeers([StaticPeer(endpoint: fixed, key: user(7))], now: 0)
        _ = discovery.onLinkEstablished(peer: largerPeer, via: nil, now: 0)
        for round in 0..<2_000 {
            let id = UserID(Bytes32(w0: random.next(), w1: random.next(), w2: random.next(), w3: random.next()))
            var attacker = FakePeer(id, host: PeerEndpoint(host: "10.\(round % 200).\(random.next() % 250).\(random.next() % 250)", port: 7747))
            attacker.instance = InstanceID(raw: random.next())
            _ = discovery.hear(&attacker, now: UInt64(round))
            _ = discovery.onLinkPing(peer: largerPeer, now: UInt64(round))
        }
        let peers = discovery.peers
        #expect(peers.count == 64 + 1, "seed \(seed)")  // full of newcomers, plus the static peer
        #expect(peers.filter { !$0.isStatic }.count == 64, "seed \(seed)")
        #expect(discovery.peer(largerPeer)?.state == .linked, "seed \(seed)")
        #expect(discovery.peer(user(7))?.isStatic == true, "seed \(seed)")
        #expect(discovery.diagnostics.sources.count <= 128, "seed \(seed)")
    }

    @Test func tableFullOfLinkedPeers_dropsNewcomers_andCountsThem() {
        var discovery = startedDiscovery { $0.maxPeers = 3 }
        for n: UInt64 in [91, 92, 93] { _ = discovery.onLinkEstablished(peer: user(n), via: nil, now: 0) }
        var newcomer = FakePeer(user(99), host: lanHost(9))
        #expect(discovery.hear(&newcomer, now: 10).decisions.isEmpty)
        #expect(discovery.peer(user(99)) == nil)
        #expect(discovery.diagnostics.tableFull == 1)
    }

    /// A full table forgets a peer that left first, then one that missed a beacon; a peer that
    /// beacons on time is never displaced, so a network larger than the table does not churn it.
    @Test func tableFull_forgetsTheGonePeerFirst_thenOneThatMissedABeacon_neverOneOnTime() {
        var discovery = startedDiscovery { $0.maxPeers = 3 }
        var peers = (91...93).map { FakePeer(user(UInt64($0)), host: lanHost($0)) }
        _ = discovery.hear(&peers[0], now: 0)
        _ = discovery.hear(&peers[1], now: 100)
        _ = discovery.hear(&peers[2], now: 200)
        _ = discovery.hear(&peers[1], leaving: true, now: 300)
        var fourth = FakePeer(user(94), host: lanHost(94))
        #expect(discovery.hear(&fourth, now: 400).decisions.first == .peerForgotten(user(92)))
        // Everyone beacons every second: at 500 none is late, and the newcomer waits.
        var fifth = FakePeer(user(95), host: lanHost(95))
        #expect(discovery.hear(&fifth, now: 500).decisions.isEmpty)
        #expect(discovery.peer(user(95)) == nil && discovery.diagnostics.tableFull == 1)
        // 91, last heard at 0, is half an interval late at 1,500; the others are not.
        #expect(discovery.hear(&fifth, now: 1_600).decisions.first == .peerForgotten(user(91)))
        #expect(discovery.peers.map(\.id) == [user(93), user(94), user(95)])
    }

    /// A walk of a full table that finds no entry to displace holds for one state-check step:
    /// a peer that falls late meanwhile is displaced at the step's end, not at once.
    @Test func tableFull_walksAtMostOncePerStateCheckStep() {
        var discovery = startedDiscovery {
            $0.maxPeers = 3
            $0.stateCheckGranularity = 1_000
        }
        var peers = (91...93).map { FakePeer(user(UInt64($0)), host: lanHost($0)) }
        _ = discovery.hear(&peers[0], now: 0)
        _ = discovery.hear(&peers[1], now: 1_000)
        _ = discovery.hear(&peers[2], now: 1_000)
        var newcomer = FakePeer(user(94), host: lanHost(94))
        #expect(discovery.hear(&newcomer, now: 1_200).decisions.isEmpty)
        // 91, last heard at 0, is half an interval late from 1,500, but the walk at 1,200 holds until 2,200.
        #expect(discovery.hear(&newcomer, now: 1_600).decisions.isEmpty)
        #expect(discovery.diagnostics.tableFull == 2)
        #expect(discovery.hear(&newcomer, now: 2_200).decisions.first == .peerForgotten(user(91)))
    }
}
