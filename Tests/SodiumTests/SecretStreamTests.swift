import Sodium
import Testing

/// A sent stream: its key, header, and the ciphertexts of `messages` with their additional data.
private struct SentStream {
    let key = SecureBytes.random(SecretStream.keyBytes)
    let header: [UInt8]
    let messages = [utf8("first"), [], utf8("third, a little longer"), utf8("last")]
    let ciphertexts: [[UInt8]]

    static func additionalData(_ index: Int) -> [UInt8] { [0x46, UInt8(index)] }

    /// The messages pushed in order; the last one carries the final tag when `finish` is true.
    init(finish: Bool = true) throws {
        let pusher = try SecretStream.Pusher(key: key)
        header = pusher.header
        var out: [[UInt8]] = []
        for (i, message) in messages.enumerated() {
            let tag: SecretStream.Tag = finish && i == messages.count - 1 ? .final : .message
            out.append(try pusher.push(message, additionalData: Self.additionalData(i), tag: tag))
        }
        ciphertexts = out
    }

    func puller() throws -> SecretStream.Puller { try SecretStream.Puller(key: key, header: header) }
}

@Suite struct SecretStreamTests {
    @Test func secretStream_messagesInOrder_roundTripWithAdditionalData() throws {
        let stream = try SentStream()
        #expect(stream.header.count == SecretStream.headerBytes)
        let puller = try stream.puller()
        for (i, ciphertext) in stream.ciphertexts.enumerated() {
            #expect(ciphertext.count == stream.messages[i].count + SecretStream.overheadBytes)
            let (message, tag) = try puller.pull(ciphertext, additionalData: SentStream.additionalData(i))
            #expect(message == stream.messages[i])
            #expect(tag == (i == stream.ciphertexts.count - 1 ? .final : .message))
        }
    }

    @Test func secretStream_reorderedMessage_failsAndStreamContinuesInOrder() throws {
        let stream = try SentStream()
        let puller = try stream.puller()
        #expect(throws: SodiumError.decryptionFailed) { try puller.pull(stream.ciphertexts[1], additionalData: SentStream.additionalData(1)) }
        // A failed pull leaves the state alone: the right message still opens.
        #expect(try puller.pull(stream.ciphertexts[0], additionalData: SentStream.additionalData(0)).message == stream.messages[0])
    }

    @Test func secretStream_duplicatedMessage_fails() throws {
        let stream = try SentStream()
        let puller = try stream.puller()
        _ = try puller.pull(stream.ciphertexts[0], additionalData: SentStream.additionalData(0))
        #expect(throws: SodiumError.decryptionFailed) { try puller.pull(stream.ciphertexts[0], additionalData: SentStream.additionalData(0)) }
    }

    @Test func secretStream_droppedMessage_fails() throws {
        let stream = try SentStream()
        let puller = try stream.puller()
        _ = try puller.pull(stream.ciphertexts[0], additionalData: SentStream.additionalData(0))
        #expect(throws: SodiumError.decryptionFailed) { try puller.pull(stream.ciphertexts[2], additionalData: SentStream.additionalData(2)) }
    }

    @Test func secretStream_flippedByteAnywhere_fails() throws {
        let stream = try SentStream()
        let ciphertext = stream.ciphertexts[2]
        for index in ciphertext.indices {
            let puller = try stream.puller()
            _ = try puller.pull(stream.ciphertexts[0], additionalData: SentStream.additionalData(0))
            _ = try puller.pull(stream.ciphertexts[1], additionalData: SentStream.additionalData(1))
            #expect(throws: SodiumError.decryptionFailed, "byte \(index)") {
                try puller.pull(flipping(ciphertext, at: index), additionalData: SentStream.additionalData(2))
            }
        }
    }

    @Test func secretStream_wrongAdditionalData_fails() throws {
        let stream = try SentStream()
        let puller = try stream.puller()
        #expect(throws: SodiumError.decryptionFailed) { try puller.pull(stream.ciphertexts[0], additionalData: SentStream.additionalData(1)) }
        #expect(throws: SodiumError.decryptionFailed) { try puller.pull(stream.ciphertexts[0]) }
    }

    @Test func secretStream_wrongKeyOrHeader_fails() throws {
        let stream = try SentStream()
        let wrongKey = try SecretStream.Puller(key: SecureBytes.random(SecretStream.keyBytes), header: stream.header)
        #expect(throws: SodiumError.decryptionFailed) { try wrongKey.pull(stream.ciphertexts[0], additionalData: SentStream.additionalData(0)) }
        let wrongHeader = try SecretStream.Puller(key: stream.key, header: flipping(stream.header, at: 0))
        #expect(throws: SodiumError.decryptionFailed) { try wrongHeader.pull(stream.ciphertexts[0], additionalData: SentStream.additionalData(0)) }
    }

    @Test func secretStream_shortCiphertext_fails() throws {
        let puller = try SentStream().puller()
        #expect(throws: SodiumError.decryptionFailed) { try puller.pull([UInt8](repeating: 0, count: SecretStream.overheadBytes - 1)) }
        #expect(throws: SodiumError.decryptionFailed) { try puller.pull([]) }
    }

    @Test func secretStream_afterFinalTag_pullAndPushThrowStreamFinished() throws {
        let stream = try SentStream()
        let puller = try stream.puller()
        for (i, ciphertext) in stream.ciphertexts.enumerated() {
            _ = try puller.pull(ciphertext, additionalData: SentStream.additionalData(i))
        }
        #expect(throws: SodiumError.streamFinished) { try puller.pull(stream.ciphertexts[0], additionalData: SentStream.additionalData(0)) }

        let pusher = try SecretStream.Pusher(key: stream.key)
        _ = try pusher.push(utf8("bye"), tag: .final)
        #expect(throws: SodiumError.streamFinished) { try pusher.push(utf8("more")) }
    }

    @Test func secretStream_cutShort_neverShowsFinalTag() throws {
        let stream = try SentStream(finish: false)
        let puller = try stream.puller()
        var tags: [SecretStream.Tag] = []
        for (i, ciphertext) in stream.ciphertexts.enumerated() {
            tags.append(try puller.pull(ciphertext, additionalData: SentStream.additionalData(i)).tag)
        }
        #expect(!tags.contains(.final))
    }

    @Test func secretStream_rekeyInStep_keepsStreamWorking() throws {
        let key = SecureBytes.random(SecretStream.keyBytes)
        let pusher = try SecretStream.Pusher(key: key)
        let puller = try SecretStream.Puller(key: key, header: pusher.header)

        let before = try pusher.push(utf8("before"))
        pusher.rekey()
        let after = try pusher.push(utf8("after"))
        // A rekey tag makes both sides rekey by themselves after that message.
        let tagged = try pusher.push(utf8("rekey now"), tag: .rekey)
        let last = try pusher.push(utf8("last"), tag: .final)

        #expect(try puller.pull(before).message == utf8("before"))
        puller.rekey()
        #expect(try puller.pull(after).message == utf8("after"))
        let rekeyed = try puller.pull(tagged)
        #expect(rekeyed.message == utf8("rekey now"))
        #expect(rekeyed.tag == .rekey)
        let final = try puller.pull(last)
        #expect(final.message == utf8("last"))
        #expect(final.tag == .final)
    }

    @Test func secretStream_rekeyOnOneSideOnly_fails() throws {
        let key = SecureBytes.random(SecretStream.keyBytes)
        let pusher = try SecretStream.Pusher(key: key)
        let puller = try SecretStream.Puller(key: key, header: pusher.header)
        pusher.rekey()
        #expect(throws: SodiumError.decryptionFailed) { try puller.pull(try pusher.push(utf8("after"))) }
    }

    @Test func secretStream_wrongKeyOrHeaderLength_isInvalidLength() {
        #expect(throws: SodiumError.invalidLength(what: "secretstream key", expected: 32, actual: 31)) {
            try SecretStream.Pusher(key: SecureBytes.random(31))
        }
        #expect(throws: SodiumError.invalidLength(what: "secretstream key", expected: 32, actual: 33)) {
            try SecretStream.Puller(key: SecureBytes.random(33), header: [UInt8](repeating: 0, count: SecretStream.headerBytes))
        }
        #expect(throws: SodiumError.invalidLength(what: "secretstream header", expected: SecretStream.headerBytes, actual: 5)) {
            try SecretStream.Puller(key: SecureBytes.random(32), header: [1, 2, 3, 4, 5])
        }
    }
}
