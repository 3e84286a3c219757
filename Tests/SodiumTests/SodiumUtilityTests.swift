import Sodium
import Testing

@Suite struct SodiumUtilityTests {
    @Test func secureBytes_description_neverShowsTheBytes() {
        let secret = SecureBytes([0xDE, 0xAD, 0xBE, 0xEF, 0x42])
        for text in [secret.description, String(describing: secret), String(reflecting: secret), "\(secret)"] {
            #expect(!text.lowercased().contains("deadbeef"))
            #expect(!text.contains("222"))  // 0xDE in decimal
        }
        #expect(secret.description == "SecureBytes(5 bytes, redacted)")
    }

    @Test func secureBytes_holdsItsBytesAndComparesByValue() {
        let bytes: [UInt8] = [1, 2, 3, 4]
        let secret = SecureBytes(bytes)
        #expect(secret.count == 4)
        #expect(secret.bytes == bytes)
        #expect(secret == SecureBytes(bytes))
        #expect(secret != SecureBytes([1, 2, 3, 5]))
        #expect(secret != SecureBytes([1, 2, 3]))
        #expect(SecureBytes([]).count == 0)
        #expect(SecureBytes([]) == SecureBytes([]))
        let filled = SecureBytes(count: 3) { $0.copyBytes(from: [9, 8, 7]) }
        #expect(filled.bytes == [9, 8, 7])
    }

    @Test func secureBytes_random_isFreshEachTime() {
        let a = SecureBytes.random(32)
        #expect(a.count == 32)
        #expect(a != SecureBytes.random(32))
    }

    @Test func hex_roundTrips() throws {
        let all = (0...255).map { UInt8($0) }
        let text = Sodium.hex(all)
        #expect(text.utf8.count == 512)
        #expect(text.hasPrefix("000102"))
        #expect(text.hasSuffix("fdfeff"))
        #expect(Sodium.bytes(hex: text) == all)
        #expect(Sodium.bytes(hex: text.uppercased()) == all)
        #expect(Sodium.hex([]) == "")
        #expect(Sodium.bytes(hex: "") == [])
    }

    @Test(arguments: ["0", "abc", "0g", "zz", " 00", "00 ", "0x00", "é0"])
    func hex_invalidText_isNil(text: String) {
        #expect(Sodium.bytes(hex: text) == nil)
    }

    @Test func constantTimeEqual_comparesContentAndLength() {
        #expect(Sodium.constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!Sodium.constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!Sodium.constantTimeEqual([1, 2, 3], [1, 2]))
        #expect(Sodium.constantTimeEqual([], []))
    }

    @Test func randomBytes_haveRequestedLengthAndDiffer() {
        #expect(Sodium.randomBytes(0) == [])
        #expect(Sodium.randomBytes(24).count == 24)
        #expect(Sodium.randomBytes(32) != Sodium.randomBytes(32))
        for _ in 0..<100 { #expect(Sodium.randomUniform(10) < 10) }
    }
}
