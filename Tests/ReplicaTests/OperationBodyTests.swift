import Identity
import Replica
import TestSupport
import Testing
import Wire

@Suite struct OperationBodyTests {
    static let alice = Fixtures.identity(0).id
    static let target = OpID(Bytes32(w0: 1, w1: 2, w2: 3, w3: 4))
    static let attachment = Attachment(name: "cat.jpg", size: 1234, mime: "image/jpeg", hash: Bytes32(w0: 9, w1: 9, w2: 9, w3: 9))

    static let samples: [OperationBody] = [
        .post(text: "héllo 👋", attachments: [attachment], location: Location(latitude: 48.85, longitude: 2.35), replyTo: target),
        .post(text: "plain", attachments: [], location: nil, replyTo: nil),
        .edit(target: target, targetSeq: 7, text: "fixed"),
        .delete(target: target, targetSeq: 7),
        .delete(target: target, targetSeq: 7, erasing: [8, 12]),
        .react(target: target, emoji: "🎉", on: true),
        .profile(subject: alice, nick: "alice", displayName: "Alice A.", status: "here", presence: .away, avatar: attachment),
        .profile(subject: alice, nick: nil, displayName: nil, status: nil, presence: nil, avatar: nil),
        .conversationCreate(name: "team", members: [alice]),
        .memberAdd(alice), .memberRemove(alice), .memberLeave,
        .conversationRename(name: "new name"),
        .taskCreate(title: "do it", owner: alice),
        .taskUpdate(target: target, title: "done it", status: .complete, owner: .cleared),
        .taskUpdate(target: target, title: nil, status: nil, owner: .set(alice)),
        .taskDelete(target: target),
        .readMarker(partition: PartitionID(Bytes32(w0: 5, w1: 5, w2: 5, w3: 5)), position: HLC(raw: 99)),
        .chatMute(partition: PartitionID(Bytes32(w0: 5, w1: 5, w2: 5, w3: 5)), muted: true),
        .chatMute(partition: PartitionID(Bytes32(w0: 6, w1: 5, w2: 5, w3: 5)), muted: false),
        .keyGrant(try! KeyGrant(granting: Fixtures.epochKey(PartitionID(Bytes32(w0: 5, w1: 5, w2: 5, w3: 5)), epoch: 3, seed: 1), to: [alice])),
        .invite(conversation: .conversation(creator: alice, nonce: Bytes32(w0: 1, w1: 1, w2: 1, w3: 1))),
    ]

    @Test(arguments: samples)
    func everyBody_roundTrips(body: OperationBody) throws {
        #expect(try OperationBody(type: body.type.rawValue, decoding: body.encoded) == body)
    }

    @Test(arguments: samples)
    func everyTruncation_isRefused(body: OperationBody) {
        let bytes = body.encoded
        // A delete without its erased edits is a delete of its own (their list is optional).
        let whole = { (length: Int) in if case .delete(_, _, let erasing) = body, !erasing.isEmpty, length == 40 { true } else { false } }
        for length in 0..<bytes.count where !whole(length) {
            #expect(throws: WireDecodingError.self) { try OperationBody(type: body.type.rawValue, decoding: Array(bytes.prefix(length))) }
        }
        // A delete may go on with the edits it erases: one more byte is a cut-short count there.
        if case .delete(_, _, []) = body {
            #expect(throws: WireDecodingError.truncated(field: "erased edit count")) { try OperationBody(type: body.type.rawValue, decoding: bytes + [0]) }
        } else {
            #expect(throws: WireDecodingError.trailingBytes(count: 1)) { try OperationBody(type: body.type.rawValue, decoding: bytes + [0]) }
        }
    }

    /// A mute is on or off: any other byte is refused, not read as on.
    @Test func chatMute_takesOnlyZeroOrOne() {
        let bytes = OperationBody.chatMute(partition: PartitionID(Bytes32(w0: 5, w1: 5, w2: 5, w3: 5)), muted: true).encoded
        #expect(throws: WireDecodingError.invalidValue(field: "muted")) {
            try OperationBody(type: OperationType.chatMute.rawValue, decoding: bytes.dropLast() + [2])
        }
    }

    /// A delete's erased edits: 1…4,096 of them, increasing, each above the target's seq.
    @Test func deleteErasingEdits_isBounded_andIncreasing() throws {
        func decode(_ tail: [UInt8]) throws(WireDecodingError) -> OperationBody {
            try OperationBody(type: OperationType.delete.rawValue, decoding: OperationBody.delete(target: Self.target, targetSeq: 7).encoded + tail)
        }
        let count = { (n: UInt16) in [UInt8(n >> 8), UInt8(n & 0xff)] }
        let seq = { (s: UInt64) in (0..<8).reversed().map { UInt8((s >> (8 * UInt64($0))) & 0xff) } }
        #expect(throws: WireDecodingError.self) { try decode(count(0)) }
        #expect(throws: WireDecodingError.self) { try decode(count(4_097)) }
        #expect(throws: WireDecodingError.self) { try decode(count(1) + seq(7)) }
        #expect(throws: WireDecodingError.self) { try decode(count(2) + seq(9) + seq(9)) }
        #expect(throws: WireDecodingError.self) { try decode(count(2) + seq(9)) }
        #expect(try decode(count(2) + seq(8) + seq(9)) == .delete(target: Self.target, targetSeq: 7, erasing: [8, 9]))
    }

    @Test func malformedBodies_giveSpecificErrors() {
        #expect(throws: WireDecodingError.invalidValue(field: "op type 255")) { try OperationBody(type: 0xff, decoding: []) }
        var reaction = OperationBody.react(target: Self.target, emoji: "x", on: true).encoded
        reaction[reaction.count - 1] = 2
        #expect(throws: WireDecodingError.invalidValue(field: "reaction on")) { try OperationBody(type: OperationType.react.rawValue, decoding: reaction) }
        var w = ByteWriter()
        w.u16(UInt16(BodyLimits.emojiBytes + 1))
        let tooLongEmoji = Self.target.bytes + w.bytes + [UInt8](repeating: 0x41, count: BodyLimits.emojiBytes + 1) + [1]
        #expect(throws: WireDecodingError.tooLong(field: "emoji", length: BodyLimits.emojiBytes + 1, limit: BodyLimits.emojiBytes)) {
            try OperationBody(type: OperationType.react.rawValue, decoding: tooLongEmoji)
        }
        var invalidUTF8 = ByteWriter()
        invalidUTF8.blob16([0xff, 0xfe])
        invalidUTF8.u8(0); invalidUTF8.u8(0); invalidUTF8.u8(0)
        #expect(throws: WireDecodingError.invalidUTF8(field: "text")) { try OperationBody(type: OperationType.post.rawValue, decoding: invalidUTF8.bytes) }
        let empty = OperationBody.post(text: "", attachments: [], location: nil, replyTo: nil).encoded
        #expect(throws: WireDecodingError.invalidValue(field: "message text is empty")) {
            try OperationBody(type: OperationType.post.rawValue, decoding: empty)
        }
        let badLocation = OperationBody.post(text: "x", attachments: [], location: Location(latitude: 91, longitude: 0), replyTo: nil).encoded
        #expect(throws: WireDecodingError.self) { try OperationBody(type: OperationType.post.rawValue, decoding: badLocation) }
    }

    @Test func fieldLimits_areCheckedBeforeSigning() {
        let long = String(repeating: "a", count: BodyLimits.textBytes + 1)
        #expect(OperationBody.post(text: long, attachments: [], location: nil, replyTo: nil).validate() != nil)
        #expect(OperationBody.taskCreate(title: "", owner: nil).validate() == "task title is empty")
        #expect(OperationBody.post(text: "ok", attachments: [], location: nil, replyTo: nil).validate() == nil)
        let longName = Attachment(name: String(repeating: "n", count: 300), size: 1, mime: "x", hash: .zero)
        #expect(OperationBody.post(text: "", attachments: [longName], location: nil, replyTo: nil).validate() != nil)
        #expect(OperationBody.keyGrant(KeyGrant(epoch: 0, keyID: .zero, boxes: [])).validate() == "a key grant names no member")
        #expect(OperationBody.invite(conversation: .directory).validate() == "an invite must name a conversation")
    }
}
