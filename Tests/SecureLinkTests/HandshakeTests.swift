import Identity
import SecureLink
import Sodium
import Testing

@Suite struct HandshakeTests {
    let alice = Identity()  // the dialer
    let bob = Identity()  // the listener

    @Test func handshake_betweenClientAndServer_provesBothIdentitiesAndAgreesOnKeys() throws {
        var client = makeClient(alice, dialing: bob.id)
        var server = makeServer(bob)
        let transcript = runHandshake(client: &client, server: &server)

        #expect(transcript.messages.map(\.count) == [64, 64, 112, 80])
        let clientSide = try #require(transcript.clientResult)
        let serverSide = try #require(transcript.serverResult)
        #expect(clientSide.remote == bob.id)
        #expect(serverSide.remote == alice.id)
        #expect(clientSide.sendingKey == serverSide.receivingKey)
        #expect(clientSide.receivingKey == serverSide.sendingKey)
        #expect(clientSide.sendingKey != clientSide.receivingKey)
        #expect(clientSide.sendingKey.count == 32 && clientSide.receivingKey.count == 32)
        #expect(client.isFinished && server.isFinished)
        #expect(client.expectedMessageLength == nil && server.expectedMessageLength == nil)
    }

    @Test func handshake_withTheSameDeploymentSecretOnBothSides_succeeds() throws {
        let closed = NetworkKey(deploymentSecret: Array("office-3rd-floor".utf8))
        var client = makeClient(alice, dialing: bob.id, network: closed)
        var server = makeServer(bob, network: closed)
        let transcript = runHandshake(client: &client, server: &server)
        #expect(try #require(transcript.clientResult).remote == bob.id)
        #expect(try #require(transcript.serverResult).remote == alice.id)
    }

    @Test func handshake_withDifferentDeploymentSecrets_serverFailsAtMessage1WithoutReply() {
        var client = makeClient(alice, dialing: bob.id, network: NetworkKey(deploymentSecret: Array("one".utf8)))
        var server = makeServer(bob, network: NetworkKey(deploymentSecret: Array("two".utf8)))
        let transcript = runHandshake(client: &client, server: &server)
        #expect(transcript.serverFailure == .wrongNetworkKey)
        #expect(transcript.messages.count == 1)  // only the client's hello: the server said nothing
        #expect(transcript.clientResult == nil && transcript.clientFailure == nil)
    }

    @Test func clientHello_underAnotherNetworkKey_serverFailsAndSendsNothing() throws {
        var client = makeClient(alice, dialing: bob.id, network: NetworkKey(deploymentSecret: [1, 2, 3]))
        var server = makeServer(bob)
        _ = server.start()
        let clientHello = try sentBytes(client.start())
        #expect(server.receive(clientHello) == [.fail(.wrongNetworkKey)])
        #expect(server.isFinished)
    }

    @Test func serverHello_underAnotherNetworkKey_clientFails() throws {
        var client = makeClient(alice, dialing: bob.id)
        _ = client.start()
        let foreignHello = hello(carrying: KeyExchange.KeyPair().publicKey, network: NetworkKey(deploymentSecret: [9]))
        #expect(client.receive(foreignHello) == [.fail(.wrongNetworkKey)])
    }

    @Test func twoSessions_betweenTheSamePeers_deriveDifferentKeys() throws {
        var firstClient = makeClient(alice, dialing: bob.id)
        var firstServer = makeServer(bob)
        var secondClient = makeClient(alice, dialing: bob.id)
        var secondServer = makeServer(bob)
        let first = try #require(runHandshake(client: &firstClient, server: &firstServer).clientResult)
        let second = try #require(runHandshake(client: &secondClient, server: &secondServer).clientResult)
        #expect(first.sendingKey != second.sendingKey)
        #expect(first.receivingKey != second.receivingKey)
    }

    @Test func expectedMessageLength_followsEachStep() throws {
        var client = makeClient(alice, dialing: bob.id)
        var server = makeServer(bob)
        #expect(client.expectedMessageLength == nil)
        #expect(server.start() == [])
        #expect(server.expectedMessageLength == 64)
        let m1 = try sentBytes(client.start())
        #expect(client.expectedMessageLength == 64)
        let m2 = try sentBytes(server.receive(m1))
        #expect(server.expectedMessageLength == 112)
        let m3 = try sentBytes(client.receive(m2))
        #expect(client.expectedMessageLength == 80)
        let serverActions = server.receive(m3)
        #expect(serverActions.count == 2)  // .send(message 4), then .established
        guard case .established = serverActions.last else {
            Issue.record("server should establish after sending message 4: \(serverActions)")
            return
        }
        let clientActions = client.receive(try sentBytes(serverActions))
        #expect(clientActions.count == 1)
        guard case .established = clientActions.first else {
            Issue.record("client should establish on message 4: \(clientActions)")
            return
        }
    }

    // MARK: Lengths

    @Test(arguments: [0, 63, 65, 128])
    func clientHello_ofWrongLength_failsWithBadLength(length: Int) {
        var server = makeServer(bob)
        _ = server.start()
        #expect(server.receive([UInt8](repeating: 7, count: length)) == [.fail(.badLength(expected: 64, received: length))])
    }

    @Test(arguments: [63, 65])
    func serverHello_ofWrongLength_failsWithBadLength(length: Int) {
        var client = makeClient(alice, dialing: bob.id)
        _ = client.start()
        #expect(client.receive([UInt8](repeating: 7, count: length)) == [.fail(.badLength(expected: 64, received: length))])
    }

    @Test(arguments: [111, 113])
    func clientAuth_ofWrongLength_failsWithBadLength(length: Int) throws {
        var client = makeClient(alice, dialing: bob.id)
        var server = makeServer(bob)
        _ = server.start()
        let m3 = try sentBytes(client.receive(try sentBytes(server.receive(try sentBytes(client.start())))))
        let resized = length < m3.count ? Array(m3.prefix(length)) : m3 + [0]
        #expect(server.receive(resized) == [.fail(.badLength(expected: 112, received: length))])
    }

    @Test(arguments: [79, 81])
    func serverAccept_ofWrongLength_failsWithBadLength(length: Int) throws {
        var client = makeClient(alice, dialing: bob.id)
        var server = makeServer(bob)
        _ = server.start()
        _ = try sentBytes(client.receive(try sentBytes(server.receive(try sentBytes(client.start())))))
        #expect(client.receive([UInt8](repeating: 1, count: length)) == [.fail(.badLength(expected: 80, received: length))])
    }

    // MARK: Deadline

    @Test func onTick_beforeTheDeadline_doesNothing() {
        var client = makeClient(alice, dialing: bob.id, now: 1_000)
        _ = client.start()
        #expect(client.deadline == 6_000)
        #expect(client.onTick(now: 1_000) == [])
        #expect(client.onTick(now: 5_999) == [])
        #expect(!client.isFinished)
    }

    @Test func onTick_fiveSecondsAfterStart_failsWithTimedOut_once() {
        var server = makeServer(bob, now: 1_000)
        _ = server.start()
        #expect(server.onTick(now: 6_000) == [.fail(.timedOut)])
        #expect(server.isFinished)
        #expect(server.onTick(now: 7_000) == [])
    }

    @Test func onTick_afterEstablishing_doesNothing() {
        var client = makeClient(alice, dialing: bob.id, now: 0)
        var server = makeServer(bob, now: 0)
        runHandshake(client: &client, server: &server)
        #expect(client.onTick(now: 60_000) == [])
        #expect(server.onTick(now: 60_000) == [])
    }
}
