import Discovery
import Identity
import TestSupport
import Testing

@testable import LinkProtocol

@Suite struct AdmissionTests {
    func admission(_ configure: (inout AdmissionConfiguration) -> Void = { _ in }) -> Admission {
        var configuration = AdmissionConfiguration()
        configuration.maxUnauthenticated = 4
        configuration.maxUnauthenticatedPerHost = 2
        configuration.violationsBeforeBan = 3
        configuration.violationWindow = 10_000
        configuration.banDuration = 60_000
        configure(&configuration)
        return Admission(configuration: configuration)
    }

    @Test func perHostCap_refusesTheNextConnection_untilOneIsReleased() {
        var gate = admission()
        #expect(gate.admit(host: "10.0.0.7", now: 0) == nil)
        #expect(gate.admit(host: "10.0.0.7", now: 0) == nil)
        #expect(gate.admit(host: "10.0.0.7", now: 0) == .tooManyFromHost(limit: 2))
        #expect(gate.admit(host: "10.0.0.8", now: 0) == nil, "other hosts keep their own budget")
        gate.release(host: "10.0.0.7")
        #expect(gate.admit(host: "10.0.0.7", now: 0) == nil)
        #expect(gate.snapshot(now: 0).refused == 1)
    }

    @Test func totalCap_refusesEveryHost() {
        var gate = admission()
        for n in 1...4 { #expect(gate.admit(host: "10.0.0.\(n)", now: 0) == nil) }
        #expect(gate.admit(host: "10.0.0.9", now: 0) == .tooManyUnauthenticated(limit: 4))
        #expect(gate.snapshot(now: 0).unauthenticated == 4)
    }

    @Test func loopback_skipsThePerHostCap_butNotTheTotal() {
        var gate = admission()
        for _ in 1...4 { #expect(gate.admit(host: "127.0.0.1", now: 0) == nil) }
        #expect(gate.admit(host: "127.0.0.1", now: 0) == .tooManyUnauthenticated(limit: 4))
    }

    @Test func linkCaps_refuseOneLinkTooMany_perHostAndInTotal_andCountTheRefusal() {
        var gate = admission {
            $0.maxLinks = 10
            $0.maxLinksPerHost = 3
        }
        #expect(gate.admitLink(host: "10.0.0.7", withHost: 2, total: 5) == nil)
        #expect(gate.admitLink(host: "10.0.0.7", withHost: 3, total: 5) == .tooManyLinksWithHost(limit: 3))
        #expect(gate.admitLink(host: "10.0.0.8", withHost: 0, total: 10) == .tooManyLinks(limit: 10))
        #expect(gate.snapshot(now: 0).refused == 2)
    }

    @Test func loopback_skipsThePerHostLinkCap_unlessTheExemptionIsOff() {
        var exempt = admission { $0.maxLinksPerHost = 3 }
        #expect(exempt.admitLink(host: "127.0.0.1", withHost: 30, total: 30) == nil)
        var strict = admission {
            $0.maxLinksPerHost = 3
            $0.exemptLoopback = false
        }
        #expect(strict.admitLink(host: "127.0.0.7", withHost: 3, total: 3) == .tooManyLinksWithHost(limit: 3))
    }

    @Test func repeatedViolations_banTheHost_forTheBanDuration() {
        var gate = admission()
        #expect(gate.recordViolation(host: "10.0.0.7", peer: nil, now: 1_000).isEmpty)
        #expect(gate.recordViolation(host: "10.0.0.7", peer: nil, now: 2_000).isEmpty)
        #expect(gate.recordViolation(host: "10.0.0.7", peer: nil, now: 3_000) == [.host("10.0.0.7", until: 63_000)])
        #expect(gate.admit(host: "10.0.0.7", now: 4_000) == .banned(until: 63_000))
        #expect(gate.admit(host: "10.0.0.7", now: 63_000) == nil, "the ban ends")
    }

    @Test func violationsOutsideTheWindow_doNotAddUp() {
        var gate = admission()
        _ = gate.recordViolation(host: "10.0.0.7", peer: nil, now: 0)
        _ = gate.recordViolation(host: "10.0.0.7", peer: nil, now: 5_000)
        #expect(gate.recordViolation(host: "10.0.0.7", peer: nil, now: 12_000).isEmpty, "the first strike expired")
        #expect(gate.banExpiry(host: "10.0.0.7", now: 12_000) == nil)
    }

    @Test func loopbackHosts_areNotBanned_butIdentitiesAre() {
        var gate = admission()
        let peer = Fixtures.identity(3).id
        var bans: [Admission.Ban] = []
        for t in UInt64(1)...3 { bans += gate.recordViolation(host: "127.0.0.1", peer: peer, now: t) }
        #expect(bans == [.peer(peer, until: 60_003)])
        #expect(gate.banExpiry(host: "127.0.0.1", now: 10) == nil)
        #expect(gate.banExpiry(peer: peer, now: 10) == 60_003)
        #expect(gate.snapshot(now: 10).bannedPeers == [peer: 60_003])
    }

    @Test func loopbackBans_whenTheExemptionIsOff() {
        var gate = admission { $0.exemptLoopback = false }
        for t in UInt64(1)...3 { _ = gate.recordViolation(host: "127.0.0.1", peer: nil, now: t) }
        #expect(gate.admit(host: "127.0.0.1", now: 10) == .banned(until: 60_003))
    }

    @Test func banTable_staysBounded() {
        var gate = admission {
            $0.violationsBeforeBan = 1
            $0.maxBans = 8
        }
        for n in 0..<100 { _ = gate.recordViolation(host: "10.1.\(n / 250).\(n % 250)", peer: nil, now: UInt64(n)) }
        #expect(gate.snapshot(now: 100).bannedHosts.count == 8)
    }
}

@Suite struct KeepaliveTests {
    @Test func pingsEveryInterval_whateverElseArrives() {
        var keepalive = Keepalive(pingInterval: 1_000, idleTimeout: 3_000, now: 0)
        #expect(keepalive.deadline == 1_000)
        #expect(keepalive.onTick(now: 999).isEmpty)
        #expect(keepalive.onTick(now: 1_000) == [.ping(nonce: 1)])
        keepalive.onReceived(now: 1_500)
        #expect(keepalive.onTick(now: 2_000) == [.ping(nonce: 2)])
        #expect(keepalive.deadline == 3_000)
    }

    @Test func silence_closesTheLink_atTheIdleTimeout() {
        var keepalive = Keepalive(pingInterval: 1_000, idleTimeout: 3_000, now: 0)
        _ = keepalive.onTick(now: 1_000)
        _ = keepalive.onTick(now: 2_000)
        #expect(keepalive.deadline == 3_000)
        #expect(keepalive.onTick(now: 3_000) == [.closeIdle])
    }

    @Test func anythingReceived_postponesTheIdleClose() {
        var keepalive = Keepalive(pingInterval: 1_000, idleTimeout: 3_000, now: 0)
        keepalive.onReceived(now: 2_500)
        #expect(keepalive.onTick(now: 3_000) == [.ping(nonce: 1)])
        #expect(keepalive.onTick(now: 5_500) == [.closeIdle])
    }
}

@Suite struct LinkTieBreakTests {
    let lo = min(Fixtures.identity(1).id, Fixtures.identity(2).id)
    let hi = max(Fixtures.identity(1).id, Fixtures.identity(2).id)
    let instance = InstanceID(raw: 7)

    @Test func bothEnds_keepTheLinkDialedByTheSmallerKey() {
        // On the smaller side, the link it dialed is outbound; on the larger side, inbound.
        #expect(LinkTieBreak.keepsNewLink(existing: (.inbound, instance), new: (.outbound, instance), local: lo, remote: hi))
        #expect(!LinkTieBreak.keepsNewLink(existing: (.outbound, instance), new: (.inbound, instance), local: lo, remote: hi))
        #expect(LinkTieBreak.keepsNewLink(existing: (.outbound, instance), new: (.inbound, instance), local: hi, remote: lo))
        #expect(!LinkTieBreak.keepsNewLink(existing: (.inbound, instance), new: (.outbound, instance), local: hi, remote: lo))
    }

    @Test func sameDirection_keepsTheExistingLink() {
        #expect(!LinkTieBreak.keepsNewLink(existing: (.outbound, instance), new: (.outbound, instance), local: lo, remote: hi))
        #expect(!LinkTieBreak.keepsNewLink(existing: (.inbound, instance), new: (.inbound, instance), local: hi, remote: lo))
    }

    @Test func aRestartedPeer_replacesTheStaleLink() {
        #expect(LinkTieBreak.keepsNewLink(existing: (.outbound, instance), new: (.inbound, InstanceID(raw: 8)), local: lo, remote: hi))
    }
}
