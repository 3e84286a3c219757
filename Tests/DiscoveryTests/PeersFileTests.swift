import Discovery
import Foundation
import Identity
import Testing

/// The static peers file: a good file in every allowed form, and one specific error, with its
/// line number, for each kind of bad line.
@Suite struct PeersFileTests {
    let keyText = "kzigdayo445fzxdr7yzvprradc5x324rn37o6x337blrdu23ae5a"

    @Test func goodFile_withCommentsBlankLinesIPv6AndKeys_parses() throws {
        let text = """
            # office
            10.20.0.15:7748  \(keyText)

            \t chat-gateway.lab.example:7748   # trailing comment
            [::1]:7768
            [fe80::1%eth0]:7748\t\(keyText.uppercased())\r
            127.0.0.1:7758 # no key

            """
        let key = try #require(UserID(text: keyText))
        #expect(
            try PeersFile.parse(text) == [
                StaticPeer(endpoint: PeerEndpoint(host: "10.20.0.15", port: 7748), key: key),
                StaticPeer(endpoint: PeerEndpoint(host: "chat-gateway.lab.example", port: 7748)),
                StaticPeer(endpoint: PeerEndpoint(host: "::1", port: 7768)),
                StaticPeer(endpoint: PeerEndpoint(host: "fe80::1%eth0", port: 7748), key: key),
                StaticPeer(endpoint: PeerEndpoint(host: "127.0.0.1", port: 7758)),
            ])
    }

    @Test func crlfLineEnds_andAMissingFinalNewline_areAccepted() throws {
        let peers = try PeersFile.parse("# peers\r\n10.0.0.1:7748\r\n[::1]:7748")
        #expect(peers.map(\.endpoint.description) == ["10.0.0.1:7748", "[::1]:7748"])
    }

    @Test func emptyAndCommentOnlyFiles_haveNoPeers() throws {
        #expect(try PeersFile.parse("") == [])
        #expect(try PeersFile.parse("# nothing yet\n\n   \n") == [])
    }

    @Test func theRepositoryExample_parses() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Peers.example")
        let bytes = try [UInt8](Data(contentsOf: url))
        let peers = try PeersFile.parse(bytes)
        #expect(peers.count == 5)
        #expect(peers.filter { $0.key != nil }.count == 1)
        #expect(peers.contains { $0.endpoint == PeerEndpoint(host: "fd00:1234::7", port: 7748) })
    }

    @Test func eachBadLine_isReportedWithItsLineNumberAndReason() {
        let bad: [(line: String, reason: String)] = [
            ("10.0.0.1", "missing ':port'"),
            ("10.0.0.1:", "port '' is not a number from 1 to 65535"),
            ("10.0.0.1:0", "port '0' is not a number from 1 to 65535"),
            ("10.0.0.1:65536", "port '65536' is not a number from 1 to 65535"),
            ("10.0.0.1:+77", "port '+77' is not a number from 1 to 65535"),
            ("10.0.0.1:http", "port 'http' is not a number from 1 to 65535"),
            (":7748", "missing host before ':'"),
            ("::1:7748", "an IPv6 address needs brackets, e.g. [::1]:7748"),
            ("[::1:7748", "'[' without a closing ']'"),
            ("[::1]7748", "missing ':port' after ']'"),
            ("[10.0.0.1]:7748", "'10.0.0.1' is not an IPv6 address"),
            ("[]:7748", "'' is not an IPv6 address"),
            ("bad/host:7748", "'bad/host' is not a host name or IPv4 address"),
            ("10.0.0.1:7748 notakey", "'notakey' is not a user id (52 base32 characters, as 'parley whoami' prints it)"),
            ("10.0.0.1:7748 \(keyText) extra", "expected 'host:port [key]', found 3 fields"),
        ]
        for (line, reason) in bad {
            let text = "# header\n10.9.9.9:7748\n\(line)\n10.9.9.10:7748\n"
            #expect(throws: PeersFileError.badLine(line: 3, reason: reason), "\(line)") { try PeersFile.parse(text) }
        }
    }

    @Test func repeatedEndpoint_namesTheEarlierLine() {
        let text = "10.0.0.1:7748\n# again:\n10.0.0.1:7748 \(keyText)\n"
        #expect(throws: PeersFileError.badLine(line: 3, reason: "10.0.0.1:7748 is already listed on line 1")) {
            try PeersFile.parse(text)
        }
    }

    @Test func oversizedFiles_areRefused() {
        let manyLines = String(repeating: "#\n", count: PeersFile.maxLines + 1)
        #expect(throws: PeersFileError.tooManyLines(limit: PeersFile.maxLines)) { try PeersFile.parse(manyLines) }
        #expect(throws: Never.self) { try PeersFile.parse(String(repeating: "#\n", count: PeersFile.maxLines)) }
        let huge = [UInt8](repeating: UInt8(ascii: "#"), count: PeersFile.maxBytes + 1)
        #expect(throws: PeersFileError.tooLarge(bytes: PeersFile.maxBytes + 1, limit: PeersFile.maxBytes)) { try PeersFile.parse(huge) }
    }

    @Test func nonUTF8File_isRefused() {
        #expect(throws: PeersFileError.notUTF8) { try PeersFile.parse([0x31, 0xFF, 0x0A]) }
    }

    @Test func endpoint_textForm_roundTrips() {
        for text in ["10.0.0.1:7748", "[::1]:7748", "[fe80::1%eth0]:1", "host.example:65535"] {
            #expect(PeerEndpoint(parsing: text)?.description == text)
        }
        #expect(PeerEndpoint(parsing: "::1:7748") == nil)
        #expect(PeerEndpoint(parsing: "[::1]:7748")?.isLoopback == true)
        #expect(PeerEndpoint(parsing: "127.0.0.1:7748")?.isLoopback == true)
        #expect(PeerEndpoint(parsing: "10.0.0.1:7748")?.isLoopback == false)
    }

    @Test func errors_nameTheProblemAndTheFix() {
        let error = PeersFileError.badLine(line: 7, reason: "missing ':port'")
        #expect(error.description == "peers file line 7: missing ':port' (expected 'host:port [key]')")
    }
}
