import Identity
import Sodium
import TestSupport
import Testing

@testable import SecureLink

@Suite struct KeyProbeTests {
    let network = NetworkKey(deploymentSecret: Array("team".utf8))
    let otherNetwork = NetworkKey(deploymentSecret: Array("other team".utf8))
    let server = Fixtures.identity(7)

    @Test func probe_isClassifiedAsProbe_andTheReplyNamesTheKey() {
        let probe = KeyProbe.makeProbe(networkKey: network)
        #expect(probe.count == KeyProbe.probeByteCount)
        #expect(KeyProbe.classify(probe, networkKey: network) == .keyProbe)
        let reply = KeyProbe.reply(to: probe, identity: server.id, networkKey: network)
        #expect(reply.count == KeyProbe.replyByteCount)
        #expect(KeyProbe.key(fromReply: reply, probe: probe, networkKey: network) == server.id)
    }

    @Test func handshakeHello_isClassifiedAsHello() {
        var handshake = Handshake(role: .client(serverKey: server.id), identity: Fixtures.identity(1), networkKey: network, startedAt: 0)
        guard case .send(let hello) = handshake.start().first else {
            Issue.record("no hello")
            return
        }
        #expect(KeyProbe.classify(hello, networkKey: network) == .handshakeHello)
        #expect(KeyProbe.classify(hello, networkKey: otherNetwork) == .unrecognized)
    }

    @Test func probeUnderAnotherNetworkKey_isUnrecognized() {
        let probe = KeyProbe.makeProbe(networkKey: otherNetwork)
        #expect(KeyProbe.classify(probe, networkKey: network) == .unrecognized)
    }

    @Test func garbageAndWrongLengths_areUnrecognized() {
        #expect(KeyProbe.classify(Sodium.randomBytes(64), networkKey: network) == .unrecognized)
        #expect(KeyProbe.classify([UInt8](repeating: 0, count: 64), networkKey: network) == .unrecognized)
        #expect(KeyProbe.classify(Array(KeyProbe.makeProbe(networkKey: network).prefix(63)), networkKey: network) == .unrecognized)
    }

    @Test func reply_isBoundToItsProbe_andItsNetwork() {
        let probe = KeyProbe.makeProbe(networkKey: network)
        let reply = KeyProbe.reply(to: probe, identity: server.id, networkKey: network)
        let anotherProbe = KeyProbe.makeProbe(networkKey: network)
        #expect(KeyProbe.key(fromReply: reply, probe: anotherProbe, networkKey: network) == nil, "a replayed reply")
        #expect(KeyProbe.key(fromReply: reply, probe: probe, networkKey: otherNetwork) == nil)
        var changed = reply
        changed[0] ^= 1
        #expect(KeyProbe.key(fromReply: changed, probe: probe, networkKey: network) == nil, "a substituted key")
        #expect(KeyProbe.key(fromReply: Array(reply.prefix(40)), probe: probe, networkKey: network) == nil)
    }

    @Test func knownLayout_nonceThenMACInTheProbeDomain() {
        let nonce = [UInt8](repeating: 0xAB, count: 32)
        let probe = KeyProbe.makeProbe(networkKey: network, nonce: nonce)
        #expect(Array(probe.prefix(32)) == nonce)
        #expect(Array(probe.suffix(32)) == Authenticator.tag(Array("parley/probe/v1".utf8) + nonce, key: network.bytes))
    }
}
