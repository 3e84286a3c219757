import Identity
import SecureLink
import Sodium
import Testing
import Wire

/// Replays, tampering, impostors and weak keys: each must fail, and the side that fails sends nothing.
@Suite struct HandshakeAttackTests {
    let alice = Identity()
    let bob = Identity()

    /// A complete, recorded session between alice (client) and bob (server).
    func recordedSession() throws -> [[UInt8]] {
        var client = makeClient(alice, dialing: bob.id)
        var server = makeServer(bob)
        let transcript = runHandshake(client: &client, server: &server)
        try #require(transcript.clientResult != nil && transcript.serverResult != nil)
        return transcript.messages
    }

    // MARK: Replay

    @Test func replayedMessage1_getsAHello_butReplayedMessage3_failsAtTheNewServer() throws {
        let recorded = try recordedSession()
        var server = makeServer(bob)
        _ = server.start()
        // SHS: the server cannot tell a replayed hello from a fresh one, so it answers...
        _ = try sentBytes(server.receive(recorded[0]))
        // ...but with a fresh ephemeral key, so the old proof no longer opens.
        #expect(server.receive(recorded[2]) == [.fail(.badClientAuth)])
    }

    @Test func replayedMessage2_isAnswered_butReplayedMessage4_failsAtTheNewClient() throws {
        let recorded = try recordedSession()
        var client = makeClient(alice, dialing: bob.id)
        _ = client.start()
        _ = try sentBytes(client.receive(recorded[1]))
        #expect(client.receive(recorded[3]) == [.fail(.badServerAuth)])
    }

    @Test func replayedMessage3_inAFreshSession_failsAtTheServer() throws {
        let recorded = try recordedSession()
        var client = makeClient(alice, dialing: bob.id)
        var server = makeServer(bob)
        _ = server.start()
        let fresh = try sentBytes(client.start())
        _ = try sentBytes(client.receive(try sentBytes(server.receive(fresh))))
        #expect(server.receive(recorded[2]) == [.fail(.badClientAuth)])
    }

    @Test func replayedMessage4_inAFreshSession_failsAtTheClient() throws {
        let recorded = try recordedSession()
        var client = makeClient(alice, dialing: bob.id)
        var server = makeServer(bob)
        _ = server.start()
        _ = try sentBytes(client.receive(try sentBytes(server.receive(try sentBytes(client.start())))))
        #expect(client.receive(recorded[3]) == [.fail(.badServerAuth)])
    }

    // MARK: Tampering

    struct Tamper: Sendable, CustomTestStringConvertible {
        let message: Int  // 1...4
        let byte: Int
        var testDescription: String { "message \(message), byte \(byte)" }
    }

    static let tampers: [Tamper] = [(1, 64), (2, 64), (3, 112), (4, 80)].flatMap { message, length in
        [0, 31, 32, length - 1].map { Tamper(message: message, byte: $0) }
    }

    @Test(arguments: tampers)
    func flippedBit_inAMessage_failsTheReceiverWithASpecificError(_ tamper: Tamper) {
        var client = makeClient(alice, dialing: bob.id)
        var server = makeServer(bob)
        let transcript = runHandshake(client: &client, server: &server) { number, bytes in
            number == tamper.message ? flipping(bytes, byte: tamper.byte, bit: 3) : bytes
        }
        let expected: HandshakeError = [.wrongNetworkKey, .wrongNetworkKey, .badClientAuth, .badServerAuth][tamper.message - 1]
        let failure = tamper.message.isMultiple(of: 2) ? transcript.clientFailure : transcript.serverFailure
        #expect(failure == expected)
        #expect(transcript.messages.count == tamper.message)  // nothing follows the tampered message
        #expect(transcript.sentAfterFailure.isEmpty)
        #expect(transcript.clientResult == nil)
    }

    // MARK: Impostors

    @Test func clientDialingBob_reachingCarol_carolCannotOpenMessage3_andTheClientTimesOut() {
        let carol = Identity()
        var client = makeClient(alice, dialing: bob.id, now: 0)
        var server = makeServer(carol, now: 0)
        let transcript = runHandshake(client: &client, server: &server)
        #expect(transcript.serverFailure == .badClientAuth)
        #expect(transcript.messages.count == 3)  // carol learns nothing and sends no message 4
        #expect(transcript.serverResult == nil && transcript.clientResult == nil)
        #expect(client.onTick(now: Handshake.defaultTimeout) == [.fail(.timedOut)])
    }

    /// The strongest impostor: it knows every ephemeral secret and bob's proof key `k4`, but
    /// signs message 4 with its own identity. The honest signer (bob) is the control case.
    @Test(arguments: [false, true])
    func serverAccept_signedByAnotherIdentity_failsWithBadServerAuth(signedByImpostor: Bool) throws {
        let carol = Identity()
        let a = KeyExchange.KeyPair()
        let b = KeyExchange.KeyPair()
        var client = makeClient(alice, dialing: bob.id, ephemeral: a)
        _ = try sentBytes(client.start())
        let m2 = hello(carrying: b.publicKey)
        let m3 = try sentBytes(client.receive(m2))

        let n = parleyNet.bytes
        let ab = try KeyExchange.sharedSecret(a.secretKey, b.publicKey).bytes
        let aB = try KeyExchange.sharedSecret(a.secretKey, Signing.curve25519PublicKey(fromEd25519: bob.id.publicKey)).bytes
        let Ab = try KeyExchange.sharedSecret(b.secretKey, Signing.curve25519PublicKey(fromEd25519: alice.id.publicKey)).bytes
        let zero = [UInt8](repeating: 0, count: 24)
        let proof = try SecretBox.open(m3, nonce: zero, key: SecureBytes(SHA256.hash(n + ab + aB)))
        let signatureA = Array(proof.prefix(64))
        let signer = signedByImpostor ? carol : bob
        let signatureB = signer.sign(n + signatureA + alice.id.publicKey + SHA256.hash(ab))
        let m4 = SecretBox.seal(signatureB, nonce: zero, key: SecureBytes(SHA256.hash(n + ab + aB + Ab)))

        let actions = client.receive(m4)
        if signedByImpostor {
            #expect(actions == [.fail(.badServerAuth)])
        } else {
            guard case .established(let result) = actions.first, actions.count == 1 else {
                Issue.record("bob's own signature should be accepted: \(actions)")
                return
            }
            #expect(result.remote == bob.id)
        }
    }

    // MARK: Weak keys

    @Test(arguments: lowOrderPoints)
    func clientHello_withALowOrderEphemeralKeyAndAValidHMAC_failsWithWeakKey(point: [UInt8]) {
        var server = makeServer(bob)
        _ = server.start()
        #expect(server.receive(hello(carrying: point)) == [.fail(.weakKey)])
    }

    @Test(arguments: lowOrderPoints)
    func serverHello_withALowOrderEphemeralKeyAndAValidHMAC_failsWithWeakKey(point: [UInt8]) {
        var client = makeClient(alice, dialing: bob.id)
        _ = client.start()
        #expect(client.receive(hello(carrying: point)) == [.fail(.weakKey)])
    }

    @Test func client_dialingAnInvalidServerKey_failsBeforeSendingAnything() {
        var client = makeClient(alice, dialing: UserID(Bytes32.zero))  // a small-order Ed25519 point
        #expect(client.start() == [.fail(.weakKey)])
    }
}
