import Identity
import SecureLink
import Sodium
import Testing

/// The four messages and the direction keys, recomputed here straight from the SHS v1 formulas
/// (Scuttlebutt Protocol Guide, "Handshake") and the derivation documented on `HandshakeResult`,
/// with fixed keys so every byte is determined.
@Suite struct HandshakeSpecTests {
    @Test func messagesAndKeys_matchTheSHSFormulas_byteForByte() throws {
        let alice = try Identity(seed: [UInt8](repeating: 0xA1, count: 32))
        let bob = try Identity(seed: [UInt8](repeating: 0xB0, count: 32))
        let a = KeyExchange.KeyPair(secretKey: SecureBytes([UInt8](repeating: 0x0A, count: 32)))
        let b = KeyExchange.KeyPair(secretKey: SecureBytes([UInt8](repeating: 0x0B, count: 32)))
        let network = NetworkKey(deploymentSecret: Array("spec".utf8))
        var client = makeClient(alice, dialing: bob.id, network: network, ephemeral: a)
        var server = makeServer(bob, network: network, ephemeral: b)
        let transcript = runHandshake(client: &client, server: &server)

        let n = network.bytes
        let A = alice.id.publicKey
        let B = bob.id.publicKey
        let ab = try KeyExchange.sharedSecret(a.secretKey, b.publicKey).bytes
        let aB = try KeyExchange.sharedSecret(a.secretKey, Signing.curve25519PublicKey(fromEd25519: B)).bytes
        let Ab = try KeyExchange.sharedSecret(Signing.curve25519SecretKey(fromEd25519: alice.keyPair.secretKey), b.publicKey).bytes
        // Both ends of each Diffie-Hellman agree (server side: b·a, B·a, b·A).
        #expect(try KeyExchange.sharedSecret(bob.boxKeyPair.secretKey, a.publicKey).bytes == aB)
        #expect(try KeyExchange.sharedSecret(b.secretKey, Signing.curve25519PublicKey(fromEd25519: A)).bytes == Ab)

        let zeroNonce = [UInt8](repeating: 0, count: 24)
        let m1 = Authenticator.tag(a.publicKey, key: n) + a.publicKey
        let m2 = Authenticator.tag(b.publicKey, key: n) + b.publicKey
        let signatureA = alice.sign(n + B + SHA256.hash(ab))
        let m3 = SecretBox.seal(signatureA + A, nonce: zeroNonce, key: SecureBytes(SHA256.hash(n + ab + aB)))
        let k4 = SHA256.hash(n + ab + aB + Ab)
        let signatureB = bob.sign(n + signatureA + A + SHA256.hash(ab))
        let m4 = SecretBox.seal(signatureB, nonce: zeroNonce, key: SecureBytes(k4))
        #expect(transcript.messages == [m1, m2, m3, m4])

        let master = GenericHash.hash(Array("parley/link/v1".utf8) + k4 + m1 + m2 + A + B)
        let clientToServer = KeyDerivation.deriveKey(SecureBytes(master), id: 1, context: "parleylk")
        let serverToClient = KeyDerivation.deriveKey(SecureBytes(master), id: 2, context: "parleylk")
        let clientResult = try #require(transcript.clientResult)
        let serverResult = try #require(transcript.serverResult)
        #expect(clientResult == HandshakeResult(remote: bob.id, sendingKey: clientToServer, receivingKey: serverToClient))
        #expect(serverResult == HandshakeResult(remote: alice.id, sendingKey: serverToClient, receivingKey: clientToServer))
    }

    @Test func secretStreams_keyedByTheHandshake_carryFramesBothWays() throws {
        let alice = Identity()
        let bob = Identity()
        var client = makeClient(alice, dialing: bob.id)
        var server = makeServer(bob)
        let transcript = runHandshake(client: &client, server: &server)
        let clientSide = try #require(transcript.clientResult)
        let serverSide = try #require(transcript.serverResult)

        var clientOut = FrameEncoder(for: clientSide)
        var serverIn = FrameDecoder(for: serverSide)
        var serverOut = FrameEncoder(for: serverSide)
        var clientIn = FrameDecoder(for: clientSide)

        serverIn.feed(clientOut.header + (try clientOut.encode(Array("hello bob".utf8))))
        clientIn.feed(serverOut.header + (try serverOut.encode(Array("hello alice".utf8))))
        #expect(try serverIn.next() == .frame(Array("hello bob".utf8)))
        #expect(try clientIn.next() == .frame(Array("hello alice".utf8)))
    }
}
