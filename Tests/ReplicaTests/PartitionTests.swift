import Foundation
import Identity
import Replica
import TestSupport
import Testing
import Wire

@Suite struct PartitionTests {
    @Test(arguments: ["lobby", "#lobby", "  #Lobby ", "LOBBY"])
    func roomNames_areNormalized(text: String) {
        #expect(RoomName(text)?.value == "lobby")
        #expect(PartitionDescriptor.room(RoomName(text)!).id == PartitionDescriptor.room(RoomName("lobby")!).id)
    }

    @Test(arguments: ["", "#", "two words", "a/b", "a#b", String(repeating: "x", count: 65), "tab\there", "bell\u{7}"])
    func badRoomNames_areRefusedWithAReason(text: String) {
        #expect(RoomName(text) == nil)
        #expect(RoomName.problem(with: text) != nil)
    }

    /// Names already normal in printable ASCII skip the Unicode rule (`RoomName.isNormalASCII`):
    /// every ASCII character, first, inside and last, gets what the rule gives.
    @Test func asciiRoomNames_getWhatTheUnicodeRuleGives() {
        for byte in UInt8(0)...UInt8(127) {
            let c = String(UnicodeScalar(byte))
            for text in [c, "a\(c)b", "\(c)x", "x\(c)", "\(c)\(c)", String(repeating: c, count: 64), String(repeating: c, count: 65)] {
                let rule = text.trimmingCharacters(in: .whitespacesAndNewlines)
                let expected = RoomName.problem(with: text) == nil ? (rule.hasPrefix("#") ? String(rule.dropFirst()) : rule).lowercased() : nil
                #expect(RoomName(text)?.value == expected, "byte \(byte), \(text.debugDescription)")
            }
        }
    }

    @Test func unicodeRoomNames_areAllowed() {
        #expect(RoomName("Café-Équipe")?.value == "café-équipe")
    }

    @Test func descriptors_roundTrip_andRecomputeTheirIds() throws {
        let alice = Fixtures.identity(0).id
        let all: [PartitionDescriptor] = [
            .room(RoomName("lobby")!), .conversation(creator: alice, nonce: Bytes32(w0: 1, w1: 2, w2: 3, w3: 4)),
            .directory, .inbox(owner: alice), .ownData(owner: alice),
        ]
        for descriptor in all {
            let decoded = try PartitionDescriptor(decoding: descriptor.encoded)
            #expect(decoded == descriptor)
            #expect(decoded.id == descriptor.id)
        }
        #expect(Set(all.map(\.id)).count == all.count)
    }

    @Test func malformedDescriptors_areRefused() {
        #expect(throws: WireDecodingError.self) { try PartitionDescriptor(decoding: []) }
        #expect(throws: WireDecodingError.invalidValue(field: "partition kind")) { try PartitionDescriptor(decoding: [99]) }
        #expect(throws: WireDecodingError.self) { try PartitionDescriptor(decoding: [PartitionKind.inbox.rawValue, 1, 2]) }
        #expect(throws: WireDecodingError.trailingBytes(count: 1)) { try PartitionDescriptor(decoding: PartitionDescriptor.directory.encoded + [0]) }
    }

    @Test func partitionRules_allowOnlyTheirOpTypes() {
        #expect(PartitionRules.allows(.post, in: .room))
        #expect(!PartitionRules.allows(.profile, in: .room))
        #expect(PartitionRules.allows(.profile, in: .directory))
        #expect(!PartitionRules.allows(.post, in: .directory))
        #expect(PartitionRules.allows(.memberAdd, in: .conversation))
        #expect(!PartitionRules.allows(.memberAdd, in: .room))
        #expect(PartitionRules.allows(.readMarker, in: .ownData))
        #expect(PartitionRules.allows(.chatMute, in: .ownData))
        #expect(!PartitionRules.allows(.chatMute, in: .room))
    }
}
