import Discovery
import Foundation
import Identity
import SecureLink
import Sodium
import TestSupport
import Testing
import Transport

@testable import NodeRuntime

@Suite struct UnixSocketTests {
    func temporaryDirectory() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("parley-unix-\(UUID().uuidString.prefix(8))").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func listener_isMode0600_echoes_andRemovesItsFileOnClose() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/control.sock"
        let listener = try UnixListener(path: path)
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        async let accepted = listener.accept()
        let client = try UnixConnection.connect(path: path)
        let server = try await accepted
        try await client.write(Array("ping\n".utf8))
        #expect(try await server.read(deadline: .now + .seconds(5)) == Array("ping\n".utf8))
        client.close()
        #expect(try await server.read(deadline: .now + .seconds(5)) == [], "end of stream after the client closes")
        server.close()
        listener.close()
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(throws: TransportError.noSocketListener(path: path)) { try UnixConnection.connect(path: path) }
    }

    @Test func aStaleSocketFile_meansNoListener_andBlocksABind() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/control.sock"
        // A bound but never listening socket leaves the same kind of file a killed node does.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        close(fd)
        try #require(bound == 0 && FileManager.default.fileExists(atPath: path))
        #expect(throws: TransportError.noSocketListener(path: path)) { try UnixConnection.connect(path: path) }
        #expect(throws: TransportError.self) { try UnixListener(path: path) }
    }

    @Test func tooLongAPath_isRefusedWithItsLimit() {
        let path = "/tmp/" + String(repeating: "x", count: 120)
        #expect(throws: TransportError.socketPathTooLong(path: path, limit: UnixListener.maxPathBytes)) { try UnixListener(path: path) }
    }
}

@Suite struct ControlProtocolTests {
    @Test func requestsAndResponses_areOneLineOfSnakeCaseJSON() throws {
        let line = try ControlProtocol.line(ControlRequest(.peers))
        #expect(String(decoding: line, as: UTF8.self) == #"{"request":"peers"}"#)
        let response = ControlResponse(pong: PongReport(pid: 7, id: "x"))
        let text = String(decoding: try ControlProtocol.line(response), as: UTF8.self)
        #expect(!text.contains("\n") && text.contains(#""pong":{"id":"x","pid":7}"#) && text.contains(#""ok":true"#))
        let report = PeerReport(
            id: "a", nick: nil, addresses: [], state: "linked", since: 1, lastSeen: 2, direction: .inbound,
            origin: "beacon", isStatic: false)
        #expect(String(decoding: try ControlProtocol.line(report), as: UTF8.self).contains(#""last_seen":2"#))
    }

    /// The pair a client that does its own I/O uses (the benchmark's pacer).
    @Test func aRequestLine_endsWithItsNewline_andAResponseLineDecodes() throws {
        let line = try ControlProtocol.requestLine(ControlRequest(.author, author: AuthorRequest(kind: "post", room: "lobby", text: "hi")))
        #expect(line.last == UInt8(ascii: "\n") && line.dropLast().allSatisfy { $0 != UInt8(ascii: "\n") })
        #expect(String(decoding: line, as: UTF8.self).hasPrefix(#"{"author":{"kind":"post","room":"lobby","text":"hi"}"#))
        let answer = #"{"author":{"author":"a","hlc":1,"id":"op","ops":1,"partition":"p","seq":1},"ok":true}"#
        #expect(try ControlProtocol.response(from: Array(answer.utf8)).author?.id == "op")
        #expect(throws: (any Error).self) { try ControlProtocol.response(from: Array("not json".utf8)) }
    }

    /// The answers written without the snake_case conversion (`keysAreWords`) are byte for byte
    /// what the conversion writes; a report with a two-word field is converted.
    @Test func responsesOfOneWordKeys_areTheSameLineWithoutTheConversion() throws {
        let author = AuthorReport(id: "op", partition: "p", author: "a", seq: 2, hlc: 3, ops: 1)
        let fast = [
            ControlResponse(author: author), ControlResponse(pong: PongReport(pid: 7, id: "x")), ControlResponse(typing: true),
            ControlResponse(watch: true), .failure("no"),
        ]
        for response in fast {
            #expect(response.keysAreWords)
            let fastLine = try ControlProtocol.line(response)
            #expect(fastLine == Array(try ControlProtocol.encoder.encode(response)))
        }
        let report = PeerReport(
            id: "a", nick: nil, addresses: [], state: "linked", since: 1, lastSeen: 2, direction: .inbound, origin: "beacon", isStatic: false)
        let peers = ControlResponse(peers: [report])
        #expect(!peers.keysAreWords)
        #expect(String(decoding: try ControlProtocol.line(peers), as: UTF8.self).contains(#""last_seen":2"#))
    }

    /// A request line without `_` is decoded without the conversion, one with it converted.
    @Test func requests_decodeAlikeWithAndWithoutUnderscores() throws {
        let post = ControlRequest(.author, author: AuthorRequest(kind: "post", room: "lobby", text: "hi"))
        let line = try ControlProtocol.line(post)
        let decodedPost = try ControlProtocol.request(from: line)
        #expect(!line.contains(UInt8(ascii: "_")) && decodedPost == post)
        let faults = #"{"request":"faults","faults":{"drop_rate":0.5,"blocked_peers":["p"]}}"#
        let decoded = try ControlProtocol.request(from: Array(faults.utf8))
        #expect(decoded.faults == FaultSettings(blockedPeers: ["p"], dropRate: 0.5))
        let underscoredText = ControlRequest(.author, author: AuthorRequest(kind: "post", room: "lobby", text: "snake_case"))
        let decodedText = try ControlProtocol.request(from: ControlProtocol.line(underscoredText))
        #expect(decodedText == underscoredText)
    }

    @Test func badRequests_areExplained() {
        #expect(ControlServer.explainBadRequest(Array(#"{"request":"frob"}"#.utf8)).hasPrefix("unknown request 'frob'"))
        #expect(ControlServer.explainBadRequest(Array(#"{"peers":1}"#.utf8)).contains("needs a \"request\" field"))
        #expect(ControlServer.explainBadRequest(Array("peers".utf8)).hasPrefix("not a JSON object"))
    }
}

/// An authenticated peer that sends garbage frames loses its link every time, and after the
/// third time its identity is banned.
@Suite struct ViolationBanTests {
    @Test func garbageFramesFromAnAuthenticatedPeer_closeItsLink_andRepeatedOnesBanIt() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("parley-ban-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        var configuration = NodeConfiguration(dataDirectory: root)
        configuration.listenHost = "127.0.0.1"
        configuration.listenPort = 0
        configuration.discoveryPort = nil
        let server = Fixtures.identity(31), rogue = Fixtures.identity(32)
        let node = Node(configuration: configuration, identity: server, log: .silent)
        let address = try await node.start()
        let networkKey = NetworkKey(deploymentSecret: nil)

        for attempt in 1...3 {
            let connection = try await TCPConnection.connect(host: "127.0.0.1", port: address.port)
            _ = try await LinkSetup.handshake(
                asClientOf: server.id, on: connection, identity: rogue, networkKey: networkKey,
                deadline: .now + .seconds(10))
            // Not a secretstream header and frames: the first frame fails authentication.
            try await connection.write(Sodium.randomBytes(24) + [0, 0, 0, 40] + Sodium.randomBytes(40))
            // The node drops the link: reads end (or fail) well before the deadline.
            let start = ContinuousClock.now
            while let bytes = try? await connection.read(deadline: .now + .seconds(10)), !bytes.isEmpty {}
            #expect(ContinuousClock.now - start < .seconds(10), "attempt \(attempt): the node did not close the link")
            connection.close()
        }
        let banned = await LinkHandlerTests.pollAsync(timeout: .seconds(10)) {
            await node.doctor().admission.bannedPeers.contains(rogue.id.text)
        }
        #expect(banned, "three violations ban the identity")
        let violations = await node.doctor().admission.violations
        #expect(violations >= 3)
        await node.stop()
    }
}
