import Discovery
import Identity
import Testing
import Wire

/// Address lists between linked peers: the codec's bounds, and candidates that are dialed but
/// never trusted or passed on.
@Suite struct AddressExchangeTests {
    let sample = [
        PeerAddress(peer: user(91), endpoint: PeerEndpoint(host: "10.77.0.91", port: 7748)),
        PeerAddress(peer: user(92), endpoint: PeerEndpoint(host: "fd00:1234::7", port: 7749)),
        PeerAddress(peer: user(93), endpoint: PeerEndpoint(host: "chat-gateway.lab.example", port: 1)),
    ]

    // MARK: Codec

    @Test func addressList_roundTrips() throws {
        let bytes = PeerAddressList.encode(sample)
        #expect(Array(bytes.prefix(2)) == [1, 3])
        #expect(Array(bytes[2..<34]) == user(91).publicKey)
        #expect(Array(bytes[34..<37]) == [0x1E, 0x44, 10])
        #expect(try PeerAddressList.decode(bytes) == sample)
        #expect(try PeerAddressList.decode(PeerAddressList.encode([])) == [])
    }

    @Test func addressList_ofTheMaximumSize_roundTrips() throws {
        let longHost = String(repeating: "h", count: PeerEndpoint.maxHostLength)
        let full = (0..<UInt64(PeerAddressList.maxEntries)).map {
            PeerAddress(peer: user($0), endpoint: PeerEndpoint(host: longHost, port: 65_535))
        }
        let bytes = PeerAddressList.encode(full)
        #expect(bytes.count == PeerAddressList.maxBytes)
        #expect(try PeerAddressList.decode(bytes) == full)
    }

    @Test func addressList_malformed_isRejectedWithASpecificError() {
        let bytes = PeerAddressList.encode(sample)
        var tooMany = bytes
        tooMany[1] = UInt8(PeerAddressList.maxEntries + 1)
        var portZero = bytes
        portZero[34...35] = [0, 0]
        var badHost = bytes
        badHost[37] = UInt8(ascii: "/")
        var longHost = bytes
        longHost[36] = 254
        var version = bytes
        version[0] = 2
        let cases: [(String, [UInt8], WireDecodingError)] = [
            ("count over the limit", tooMany, .tooLong(field: "count", length: 65, limit: 64)),
            ("port 0", portZero, .invalidValue(field: "port")),
            ("host with a slash", badHost, .invalidValue(field: "host")),
            ("host over 253 bytes", longHost, .tooLong(field: "host", length: 254, limit: 253)),
            ("unknown version", version, .invalidValue(field: "version")),
            ("a byte after the end", bytes + [0], .trailingBytes(count: 1)),
            (
                "oversized", [UInt8](repeating: 1, count: PeerAddressList.maxBytes + 1),
                .tooLong(field: "address list", length: PeerAddressList.maxBytes + 1, limit: PeerAddressList.maxBytes)
            ),
        ]
        for (name, input, expected) in cases {
            #expect(throws: expected, "\(name)") { try PeerAddressList.decode(input) }
        }
    }

    @Test func addressList_cutAtAnyLength_throws() {
        let bytes = PeerAddressList.encode(sample)
        for length in 0..<bytes.count {
            #expect(throws: WireDecodingError.self, "\(length) bytes") { try PeerAddressList.decode(Array(bytes.prefix(length))) }
        }
    }

    // MARK: Candidates

    @Test func addressesFromALinkedPeer_becomeCandidates_dialedByTheKeyRule() {
        var discovery = startedDiscovery()
        let relay = user(60)
        _ = discovery.onLinkEstablished(peer: relay, via: nil, now: 0)
        let smaller = PeerAddress(peer: smallerPeer, endpoint: PeerEndpoint(host: "10.88.0.10", port: 7748))
        let larger = PeerAddress(peer: largerPeer, endpoint: PeerEndpoint(host: "10.88.0.90", port: 7748))
        let own = PeerAddress(peer: me, endpoint: PeerEndpoint(host: "10.88.0.50", port: 7748))
        let sender = PeerAddress(peer: relay, endpoint: PeerEndpoint(host: "10.88.0.60", port: 7748))
        let directives = discovery.onPeerAddresses([smaller, larger, own, sender], from: relay, now: 100)
        #expect(
            directives.decisions == [
                .peerDiscovered(
                    PeerInfo(
                        id: smallerPeer, state: .discovered, origin: .exchanged, isStatic: false,
                        addresses: [smaller.endpoint], since: 100, lastSeen: nil)),
                .peerDiscovered(
                    PeerInfo(
                        id: largerPeer, state: .discovered, origin: .exchanged, isStatic: false,
                        addresses: [larger.endpoint], since: 100, lastSeen: nil)),
                .connect(peer: largerPeer, at: larger.endpoint),
            ])
        #expect(discovery.peers.map(\.id) == [smallerPeer, relay, largerPeer])
    }

    @Test func addresses_fromAPeerThatIsNotLinked_areIgnored() {
        var discovery = startedDiscovery()
        var stranger = FakePeer(user(60), host: lanHost(60))
        _ = discovery.hear(&stranger, now: 0)
        let list = [PeerAddress(peer: largerPeer, endpoint: PeerEndpoint(host: "10.88.0.90", port: 7748))]
        #expect(discovery.onPeerAddresses(list, from: user(60), now: 10).isEmpty)
        #expect(discovery.peer(largerPeer) == nil)
    }

    @Test func candidateAddress_ofAPeerHeardDirectly_isTriedLast() {
        var discovery = startedDiscovery()
        var bob = FakePeer(largerPeer, host: lanHost(2))
        _ = discovery.hear(&bob, now: 0)
        _ = discovery.onLinkEstablished(peer: user(60), via: nil, now: 0)
        let hint = PeerEndpoint(host: "10.88.0.90", port: 7748)
        _ = discovery.onPeerAddresses([PeerAddress(peer: largerPeer, endpoint: hint)], from: user(60), now: 10)
        #expect(discovery.peer(largerPeer)?.addresses == [bob.dialEndpoint, hint])
    }

    @Test func candidates_neverDisplaceKnownPeers() {
        var discovery = startedDiscovery { $0.maxPeers = 2 }
        var bob = FakePeer(largerPeer, host: lanHost(2))
        _ = discovery.hear(&bob, now: 0)
        _ = discovery.onLinkEstablished(peer: user(60), via: nil, now: 0)
        let list = [PeerAddress(peer: user(95), endpoint: PeerEndpoint(host: "10.88.0.95", port: 7748))]
        #expect(discovery.onPeerAddresses(list, from: user(60), now: 10).decisions.isEmpty)
        #expect(discovery.peers.map(\.id) == [user(60), largerPeer])
        #expect(discovery.diagnostics.tableFull == 1)
    }

    @Test func candidateNeverReached_isGoneAfterThreeUnheardPeriods() {
        var shell = TestShell()
        shell.start()
        shell.at(0) { discovery, now in discovery.onLinkEstablished(peer: user(60), via: nil, now: now) }
        let list = [PeerAddress(peer: smallerPeer, endpoint: PeerEndpoint(host: "10.88.0.10", port: 7748))]
        shell.at(0) { discovery, now in discovery.onPeerAddresses(list, from: user(60), now: now) }
        for ping in stride(from: UInt64(10_000), through: 200_000, by: 10_000) {
            shell.at(ping) { discovery, now in discovery.onLinkPing(peer: user(60), now: now) }
        }
        #expect(shell.discovery.peer(smallerPeer)?.state == .gone)
        #expect(shell.log.filter { $0.directive == .peerStateChanged(smallerPeer, .gone) }.map(\.time) == [180_000])
    }

    @Test func shareableAddresses_areProvenOnes_withoutTheRecipientOrHearsay() throws {
        var discovery = startedDiscovery()
        let recipient = user(60)
        var bob = FakePeer(largerPeer, host: lanHost(2))
        _ = discovery.hear(&bob, now: 0)
        let dialed = PeerEndpoint(host: "10.88.0.70", port: 7748)
        _ = discovery.onLinkEstablished(peer: user(70), via: dialed, now: 0)
        _ = discovery.onLinkEstablished(peer: user(80), via: nil, now: 0)  // inbound: no address known
        _ = discovery.onLinkEstablished(peer: recipient, via: PeerEndpoint(host: "10.88.0.60", port: 7748), now: 0)
        let hearsay = [PeerAddress(peer: user(99), endpoint: PeerEndpoint(host: "10.88.0.99", port: 7748))]
        _ = discovery.onPeerAddresses(hearsay, from: recipient, now: 10)
        #expect(
            discovery.shareableAddresses(for: recipient) == [
                PeerAddress(peer: user(70), endpoint: dialed),
                PeerAddress(peer: largerPeer, endpoint: bob.dialEndpoint),
            ])
        #expect(discovery.shareableAddresses(for: recipient, limit: 1).count == 1)
        // Round trip through the codec, as the shell would send it.
        let wire = PeerAddressList.encode(discovery.shareableAddresses(for: recipient))
        #expect(try PeerAddressList.decode(wire).count == 2)
    }
}
