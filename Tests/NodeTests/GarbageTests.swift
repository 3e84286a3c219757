import Discovery
import Foundation
import Identity
import SecureLink
import Sodium
import TestSupport
import Testing
import Transport
import Wire

extension NodeProcessTests {
    /// docs/DESIGN.md §4.2 and §8 (adversarial): a node that receives garbage keeps running, keeps its
    /// honest links, and still links to newcomers.
    @Suite struct Garbage {
        @Test func garbageOnTCPAndUDP_leavesTheNodeRunning_withItsHonestLinks() async throws {
            let cluster = NodeCluster(slot: 7)
            defer { cluster.shutdown() }
            let victim = try await cluster.node("victim"), honest = try await cluster.node("honest")
            for node in [victim, honest] { try await node.start(cluster.loopbackArguments + NodeCluster.fastTiming) }
            try #require(await poll(timeout: .seconds(5)) { await allLinked([victim, honest]) }, "\(cluster.logs)")
            let status = await victim.parley(["status", "--json"])
            let listen = try #require(
                status.stdout.firstMatch(of: /"listen"\s*:\s*"127\.0\.0\.1:(\d+)"/).flatMap { UInt16($0.1) },
                "\(status)")
            let victimKey = try #require(UserID(text: victim.id))

            // TCP: random bytes, a truncated hello, a valid hello left to stall past the deadline.
            for _ in 0..<3 {
                let connection = try await TCPConnection.connect(host: "127.0.0.1", port: listen)
                try await connection.write(Sodium.randomBytes(200))
                connection.close()
            }
            let truncated = try await TCPConnection.connect(host: "127.0.0.1", port: listen)
            try await truncated.write(Array(Self.clientHello(to: victimKey).prefix(30)))
            truncated.close()
            var stalled: [TCPConnection] = []
            for _ in 0..<3 {
                let connection = try await TCPConnection.connect(host: "127.0.0.1", port: listen)
                try await connection.write(Self.clientHello(to: victimKey))
                stalled.append(connection)
            }

            // UDP: random datagrams, and a flood of beacons with random identities (valid and
            // invalid MACs), all to the loopback broadcast the nodes listen on.
            let udp = try UDPSocket(host: "0.0.0.0", port: 0)
            let target = try SocketAddress(ipAddress: "127.255.255.255", port: cluster.discoveryPort)
            let rightKey = BeaconKey(networkKey: NetworkKey(deploymentSecret: nil).bytes)
            let wrongKey = BeaconKey(networkKey: Sodium.randomBytes(32))
            for index in 0..<300 {
                let identity = UserID(Bytes32(Sodium.randomBytes(32))!)
                let beacon = Beacon(tcpPort: 1, instanceID: .random(), identity: identity, seq: 1, interval: 1_000)
                switch index % 3 {
                case 0: try await udp.send(Sodium.randomBytes(Int(Sodium.randomUniform(200)) + 1), to: target)
                case 1: try await udp.send(beacon.encoded(key: rightKey), to: target)
                default: try await udp.send(beacon.encoded(key: wrongKey), to: target)
                }
            }
            udp.close()

            // The stalled handshakes time out (2 s here); meanwhile the honest link stays up.
            let violations = await poll(timeout: .seconds(6)) {
                await victim.parley(["doctor", "--json"]).stdout.firstMatch(of: /"violations"\s*:\s*(\d+)/).flatMap { Int($0.1) } ?? 0 >= 6
            }
            let doctor = await victim.parley(["doctor"]).stdout
            #expect(violations, "the node did not count the garbage as violations\n\(doctor)")
            for connection in stalled { connection.close() }
            #expect(victim.process?.isRunning == true, "the victim died\n\(cluster.logs)")
            #expect(await allLinked([victim, honest]), "\(cluster.logs)")

            let newcomer = try await cluster.node("newcomer")
            try await newcomer.start(cluster.loopbackArguments + NodeCluster.fastTiming)
            let joined = await poll(timeout: .seconds(5)) {
                guard await victim.lists([honest, newcomer], as: "linked") else { return false }
                return await newcomer.lists([victim], as: "linked")
            }
            #expect(joined, "a new honest node could not link to the victim\n\(cluster.logs)")
        }

        /// Message 1 of a real handshake to `server` under the default network key.
        static func clientHello(to server: UserID) -> [UInt8] {
            var handshake = Handshake(
                role: .client(serverKey: server), identity: Identity(), networkKey: NetworkKey(deploymentSecret: nil),
                startedAt: 0)
            guard case .send(let hello) = handshake.start().first else { return [] }
            return hello
        }
    }
}
