import Discovery
import Identity
import Sodium
import Testing
import Wire

/// The beacon's byte table, its MAC, and a specific error for every kind of bad datagram.
@Suite struct BeaconCodecTests {
    let sample = Beacon(
        isLeaving: false, tcpPort: 7748, instanceID: InstanceID(raw: 0x0102_0304_0506_0708),
        identity: user(77), seq: 0x1122_3344_5566_7788, interval: 5_000)

    /// The beacon key as the docs derive it, computed independently of the code under test.
    var expectedBeaconKey: [UInt8] { GenericHash.hash(Array("parley/beacon/v1".utf8), key: networkKey) }

    /// `fields` (64 bytes) with a MAC that verifies under the test network's beacon key.
    func authenticated(_ fields: [UInt8]) -> [UInt8] {
        fields + Authenticator.tag(fields, key: expectedBeaconKey)
    }

    @Test func beacon_roundTrip_keepsEveryField() throws {
        for leaving in [false, true] {
            var beacon = sample
            beacon.isLeaving = leaving
            let bytes = beacon.encoded(key: beaconKey)
            #expect(bytes.count == 96)
            #expect(try Beacon(decoding: bytes, key: beaconKey) == beacon)
        }
    }

    @Test func beacon_layout_matchesTheByteTable() {
        var leaving = sample
        leaving.isLeaving = true
        let bytes = leaving.encoded(key: beaconKey)
        #expect(Array(bytes[0..<4]) == Array("PRLY".utf8))
        #expect(bytes[4] == 1)
        #expect(bytes[5] == 0x01)
        #expect(Array(bytes[6..<8]) == [0x1E, 0x44])  // 7748
        #expect(Array(bytes[8..<16]) == [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(Array(bytes[16..<48]) == user(77).publicKey)
        #expect(Array(bytes[48..<56]) == [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88])
        #expect(Array(bytes[56..<60]) == [0x00, 0x00, 0x13, 0x88])  // 5000 ms
        #expect(Array(bytes[60..<64]) == [0, 0, 0, 0])
        #expect(Array(bytes[64..<96]) == Authenticator.tag(Array(bytes[0..<64]), key: expectedBeaconKey))
    }

    @Test func beaconKey_differsFromTheNetworkKey() throws {
        // A beacon MAC'd with the raw network key (the handshake's HMAC key) must not verify.
        var fields = sample.encoded(key: beaconKey)
        fields.removeLast(32)
        let wrong = fields + Authenticator.tag(fields, key: networkKey)
        #expect(throws: BeaconError.badMAC) { try Beacon(decoding: wrong, key: beaconKey) }
        #expect(expectedBeaconKey != networkKey)
    }

    @Test func beacon_fromAnotherNetwork_isBadMAC() {
        let bytes = sample.encoded(key: otherBeaconKey)
        #expect(throws: BeaconError.badMAC) { try Beacon(decoding: bytes, key: beaconKey) }
    }

    @Test func beacon_withAnyBitFlipped_isRejected() {
        let bytes = sample.encoded(key: beaconKey)
        for offset in bytes.indices {
            for bit in [0x01, 0x80] as [UInt8] {
                var damaged = bytes
                damaged[offset] ^= bit
                let expected: BeaconError =
                    switch offset {
                    case 0..<4: .badMagic
                    case 4: .unsupportedVersion
                    default: .badMAC  // flags, reserved bits and bytes included: the MAC covers them
                    }
                #expect(throws: expected, "byte \(offset) bit \(bit)") { try Beacon(decoding: damaged, key: beaconKey) }
            }
        }
    }

    @Test func datagram_ofWrongLength_isWrongLength() {
        let bytes = sample.encoded(key: beaconKey)
        for length in [0, 1, 3, 4, 5, 63, 64, 95] {
            #expect(throws: BeaconError.wrongLength, "\(length) bytes") { try Beacon(decoding: Array(bytes.prefix(length)), key: beaconKey) }
        }
        for extra in [1, 32, 1_000] {
            let long = bytes + [UInt8](repeating: 0, count: extra)
            #expect(throws: BeaconError.wrongLength, "\(96 + extra) bytes") { try Beacon(decoding: long, key: beaconKey) }
        }
    }

    @Test func datagram_ofAnotherProtocol_isBadMagic() {
        let zre: [UInt8] = Array("ZRE".utf8) + [0x01] + [UInt8](repeating: 9, count: 18)
        for datagram in [zre, [UInt8](repeating: 0, count: 96), Array("PRL".utf8) + [0x00]] {
            #expect(throws: BeaconError.badMagic) { try Beacon(decoding: datagram, key: beaconKey) }
        }
    }

    @Test func beacon_ofAnotherVersion_isUnsupportedVersion_whateverItsLength() {
        var bytes = sample.encoded(key: beaconKey)
        for version: UInt8 in [0, 2, 255] {
            bytes[4] = version
            #expect(throws: BeaconError.unsupportedVersion) { try Beacon(decoding: bytes, key: beaconKey) }
            #expect(throws: BeaconError.unsupportedVersion) { try Beacon(decoding: bytes + [0, 0, 0, 0], key: beaconKey) }
        }
    }

    @Test func beacon_announcingPortOrIntervalZero_isRejected() {
        var fields = Array(sample.encoded(key: beaconKey).prefix(64))
        fields[6] = 0
        fields[7] = 0
        #expect(throws: BeaconError.invalidPort) { try Beacon(decoding: authenticated(fields), key: beaconKey) }
        fields = Array(sample.encoded(key: beaconKey).prefix(64))
        fields.replaceSubrange(56..<60, with: [0, 0, 0, 0])
        #expect(throws: BeaconError.invalidInterval) { try Beacon(decoding: authenticated(fields), key: beaconKey) }
    }

    @Test func beacon_withUnknownFlagsAndReservedBytes_isRead() throws {
        var fields = Array(sample.encoded(key: beaconKey).prefix(64))
        fields[5] = 0xFE  // every flag but "leaving"
        fields.replaceSubrange(60..<64, with: [1, 2, 3, 4])
        #expect(try Beacon(decoding: authenticated(fields), key: beaconKey) == sample)
    }

    @Test func instanceIDs_areRandom() {
        #expect(InstanceID.random() != InstanceID.random())
        #expect(InstanceID(raw: 0x0102_0304_0506_0708).description == "0102030405060708")
    }
}
