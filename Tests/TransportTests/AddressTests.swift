import Glibc
import Testing

@testable import Transport

extension TransportTests {
    @Suite("Addresses, interfaces and errors")
    struct AddressTests {
        @Test(arguments: [
            ("127.0.0.1:7748", "127.0.0.1", 7748),
            ("[::1]:7748", "::1", 7748),
            ("localhost:1", "localhost", 1),
            ("  node7.lan:80 ", "node7.lan", 80),
            ("0.0.0.0:0", "0.0.0.0", 0),
            ("10.0.0.1", "10.0.0.1", 7748),  // bare host: the default port
            ("::1", "::1", 7748),
            ("[fe80::1]", "fe80::1", 7748),
        ])
        func endpoint_parses(text: String, host: String, port: Int) throws {
            let endpoint = try HostPort(parsing: text, defaultPort: 7748)
            #expect(endpoint == HostPort(host: host, port: UInt16(port)))
        }

        @Test(arguments: ["127.0.0.1", "127.0.0.1:99999", "[::1", "[::1]x", ":7748", "host:port", "a b:1", ""])
        func endpoint_rejects(text: String) {
            #expect(throws: TransportError.invalidAddress(text)) { _ = try HostPort(parsing: text) }
        }

        @Test func endpoint_descriptionParsesBack() throws {
            for text in ["127.0.0.1:7748", "[::1]:7748", "node7.lan:80"] {
                #expect(try HostPort(parsing: text).description == text)
            }
        }

        @Test func socketAddress_validatesAndFormats() throws {
            #expect(try SocketAddress(ipAddress: "::1", port: 7748).description == "[::1]:7748")
            #expect(try SocketAddress(ipAddress: "10.0.0.7", port: 1).family == .ipv4)
            #expect(try SocketAddress(ipAddress: "::ffff:10.0.0.7", port: 1).unmappedHost == "10.0.0.7")
            #expect(try SocketAddress(ipAddress: "::1", port: 1).unmappedHost == "::1")
            #expect(throws: TransportError.invalidAddress("300.1.1.1")) {
                _ = try SocketAddress(ipAddress: "300.1.1.1", port: 1)
            }
            #expect(throws: TransportError.invalidAddress("node7.lan")) {
                _ = try SocketAddress(ipAddress: "node7.lan", port: 1)
            }
        }

        @Test func resolve_numericAndLocalhost_withoutLookup() async throws {
            #expect(
                try await SocketAddress.resolve(host: "127.0.0.1", port: 5) == [
                    try SocketAddress(ipAddress: "127.0.0.1", port: 5)
                ])
            #expect(
                try await SocketAddress.resolve(host: "[::1]", port: 5) == [
                    try SocketAddress(ipAddress: "::1", port: 5)
                ])
            #expect(try await SocketAddress.resolve(host: "LocalHost", port: 5).first?.description == "127.0.0.1:5")
        }

        @Test func networkInterfaces_listLoopback() throws {
            let interfaces = try NetworkInterfaces.list()
            let loopback = try #require(interfaces.first { $0.name == "lo" }, "interfaces: \(interfaces)")
            #expect(loopback.address == "127.0.0.1")
            #expect(loopback.netmask == "255.0.0.0")
            #expect(loopback.isLoopback && loopback.isUp)
            #expect(loopback.directedBroadcast == "127.255.255.255")
            #expect(interfaces.allSatisfy { !$0.supportsBroadcast || $0.broadcastAddress != nil })
        }

        @Test func errors_nameTheFix_andCarryErrno() {
            let inUse = TransportError.addressInUse(host: "0.0.0.0", port: 7748)
            #expect(inUse.description.contains("port 7748"))
            #expect(inUse.description.contains("--listen 0.0.0.0:PORT"))
            #expect(inUse.errno == EADDRINUSE)
            #expect(TransportError.connectionRefused(host: "::1", port: 9).description.contains("[::1]:9"))
            #expect(TransportError.closed.errno == nil)
            let privileged = TransportError.fromErrno(
                EACCES, call: "bind", address: try? SocketAddress(ipAddress: "0.0.0.0", port: 80))
            #expect(privileged.description.contains("port of 1024 or above"))
            let broadcast = TransportError.permissionDenied(operation: "sendto 127.255.255.255:7747", errno: EACCES)
            #expect(broadcast.description.contains("broadcast enabled"))
            #expect(TransportError.fromErrno(ECONNREFUSED, call: "connect") == .connectionRefused(host: "?", port: 0))
            let other = TransportError.fromErrno(EBADF, call: "recv")
            #expect(other == .system(call: "recv", errno: EBADF, message: "Bad file descriptor"))
            #expect(other.description == "recv failed: Bad file descriptor (errno \(EBADF))")
        }
    }
}
