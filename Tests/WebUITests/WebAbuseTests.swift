import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Starving the web server (issue 39): hostile connections from other loopback addresses against
/// a real `parley run`, while the user's own client on 127.0.0.1 (with the token) is timed.
@Suite(.serialized) struct WebAbuseTests {
    /// The node's resident set in KiB (/proc/PID/status VmRSS).
    static func residentKiB(_ node: WebNode) -> Int {
        guard let pid = node.process?.pid, let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    @Test func aThousandHostileConnections_doNotKeepTheTokenHolderWaiting_norGrowMemory() async throws {
        let (directory, node) = try await APITests.startNode("flood")
        defer {
            node.kill()
            directory.remove()
        }
        // The test process holds the flood's sockets: up to 1,000 of them, as the limit allows.
        let connections = min(1_000, RawSocket.raiseDescriptorLimit() - 200)
        var honest = node.client
        honest.readTimeoutSeconds = 5
        var json = node.bearer
        json["Content-Type"] = "application/json"
        #expect(try honest.send("GET", "/api/me", headers: node.bearer).status == 200)
        let before = Self.residentKiB(node)

        // 8 connections from each of 125 addresses (127.0.0.2 …): under the per-address cap, so
        // only the total cap and the deadlines stand between them and the honest client.
        let flood = WebFlood(port: node.port, connections: connections, perAddress: 8)
        flood.start()
        defer { flood.stop() }
        let up = await poll(timeout: .seconds(20)) { flood.current.opened >= connections }
        #expect(up, "the flood opened only \(flood.current)")

        // Eight seconds of honest requests, a GET and a POST with a body in turn, past the header
        // deadline (5 s) so the slow connections are cut and opened again meanwhile.
        var times: [Duration] = []
        var peak = before
        let end = ContinuousClock.now + .seconds(8)
        var round = 0
        while ContinuousClock.now < end {
            let started = ContinuousClock.now
            let response: HTTPTestClient.Response
            do {
                response =
                    round % 2 == 0
                    ? try honest.send("GET", "/api/me", headers: node.bearer)
                    : try honest.send("POST", "/api/rooms", headers: json, body: Array(#"{"name":"lobby"}"#.utf8))
            } catch {
                Issue.record("honest request \(round) got no answer within 5 s (\(error)); flood: \(flood.current)")
                break
            }
            let took = ContinuousClock.now - started
            times.append(took)
            #expect(response.status < 300, "honest request \(round): \(response)")
            peak = max(peak, Self.residentKiB(node))
            round += 1
            try await Task.sleep(for: .milliseconds(200))
        }
        let during = flood.current
        flood.stop()
        // After the flood: the server answers, and what the flood cost is given back or bounded.
        #expect(try honest.send("GET", "/api/me", headers: node.bearer).status == 200)
        let after = Self.residentKiB(node)

        let sorted = times.sorted()
        let median = sorted.isEmpty ? .zero : sorted[sorted.count / 2]
        let worst = sorted.last ?? .zero
        print(
            "WebAbuseTests [flood] \(connections) hostile connections from \((connections + 7) / 8) addresses (\(during)); "
                + "honest answers: \(times.count), median \(median), max \(worst); node RSS \(before / 1024) → peak \(peak / 1024) → after \(after / 1024) MiB"
        )
        #expect(times.count >= 5, "too few honest answers: \(times.count)")
        #expect(worst < .seconds(5))
        #expect(peak - before < 64 << 10, "RSS grew from \(before) KiB to \(peak) KiB")
        #expect(during.maxOpen >= connections * 9 / 10, "the flood never held its connections open: \(during)")
    }

    @Test func headersTricklingIn_areCutAtTheDeadline() async throws {
        let (directory, node) = try await APITests.startNode("trickle")
        defer {
            node.kill()
            directory.remove()
        }
        let socket = try #require(RawSocket.connect(port: node.port, from: "127.0.0.3"))
        defer { close(socket) }
        let started = ContinuousClock.now
        RawSocket.send(socket, Array("GET /api/me HTTP/1.1\r\nHost: 127.0.0.1:\(node.port)\r\nX-Slow: ".utf8))
        // A byte every half second: an idle timeout never fires, the header deadline (5 s) does.
        var closed = false
        while !closed && ContinuousClock.now - started < .seconds(12) {
            RawSocket.send(socket, [UInt8(ascii: "x")])
            closed = RawSocket.closedByServer(socket, within: .milliseconds(500))
        }
        let took = ContinuousClock.now - started
        print("WebAbuseTests [trickle] headers a byte every 0.5 s: closed after \(took)")
        #expect(closed && took < .seconds(10), "still open after \(took)")
        #expect(try node.client.send("GET", "/api/me", headers: node.bearer).status == 200)
    }

    @Test func oneAddress_isCappedAt32Connections_andTheUserStillGetsIn() async throws {
        let (directory, node) = try await APITests.startNode("per-address")
        defer {
            node.kill()
            directory.remove()
        }
        var sockets: [Int32] = []
        defer { for socket in sockets { close(socket) } }
        for _ in 0..<48 {
            if let socket = RawSocket.connect(port: node.port, from: "127.0.0.4") { sockets.append(socket) }
        }
        // Those over the cap are closed at once; the rest stay until the header deadline.
        var kept = sockets.count
        await poll(timeout: .seconds(3)) {
            kept = sockets.filter { !RawSocket.closedByServer($0, within: .zero) }.count
            return kept <= 32
        }
        print("WebAbuseTests [per-address] 48 connections from 127.0.0.4: \(kept) kept")
        #expect(kept == 32, "\(kept) of \(sockets.count) kept")
        #expect(try node.client.send("GET", "/api/me", headers: node.bearer).status == 200)
    }
}
