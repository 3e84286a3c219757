import Foundation
import Transport

/// Serves the control socket: one task per client, one JSON response line per request line.
///
/// A client is anyone who can open `control.sock` (mode 0600 in a 0700 directory: the node's
/// own user). Requests are answered in order per client; a malformed line gets an error
/// response and the connection stays open; an over-long line closes it.
final class ControlServer: Sendable {
    private let listener: UnixListener
    private unowned let node: Node

    init(listener: UnixListener, node: Node) {
        self.listener = listener
        self.node = node
    }

    /// Accepts clients until `close`.
    func run() async {
        await withDiscardingTaskGroup { group in
            while true {
                guard let client = try? await listener.accept() else { break }
                group.addTask { await self.serve(client) }
            }
        }
    }

    /// Stops accepting and removes the socket file; clients being served finish their request.
    func close() {
        listener.close()
    }

    private func serve(_ client: UnixConnection) async {
        defer { client.close() }
        var lines = LineBuffer(limit: ControlProtocol.maxLineBytes)
        while true {
            guard let bytes = try? await client.read(), !bytes.isEmpty else { return }
            lines.feed(bytes)
            while true {
                let line: [UInt8]
                do {
                    guard let next = try lines.nextLine() else { break }
                    line = next
                } catch {
                    _ = try? await reply(.failure("request line over \(ControlProtocol.maxLineBytes) bytes"), to: client)
                    return
                }
                guard !line.isEmpty else { continue }
                let response: ControlResponse
                let request = try? ControlProtocol.request(from: line)
                if let request {
                    response = await node.respond(to: request)
                } else {
                    response = .failure(Self.explainBadRequest(line))
                }
                let replied = (try? await reply(response, to: client)) != nil
                // A wipe stops the node, which ends this task: only after its answer is written.
                if request?.request == .wipe, response.wipe == true { Task { [node] in await node.wipe() } }
                guard replied else { return }
                if request?.request == .watch { return await stream(to: client) }
            }
        }
    }

    /// Writes one `ControlEvent` line per node event until the client goes away or the node
    /// stops. A client that does not read for `eventWriteDeadline` is dropped (its events would
    /// otherwise pile up in the socket).
    private func stream(to client: UnixConnection) async {
        // The client sends nothing after `watch`; its end of the connection closing shows as a
        // read of zero bytes, which ends the stream even while no event comes.
        let events = await node.events()
        let closed = Task {
            while let bytes = try? await client.read(), !bytes.isEmpty {}
        }
        defer { closed.cancel() }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in events {
                    guard var line = try? ControlProtocol.line(ControlEvent(event)) else { continue }
                    line.append(UInt8(ascii: "\n"))
                    guard (try? await client.write(line, deadline: .now + Self.eventWriteDeadline)) != nil else { return }
                }
            }
            group.addTask { await closed.value }
            await group.next()
            // Whichever side ended, close the connection: that also ends a read still waiting.
            client.close()
            group.cancelAll()
        }
    }

    static let eventWriteDeadline: Duration = .seconds(5)

    private func reply(_ response: ControlResponse, to client: UnixConnection) async throws {
        var line = (try? ControlProtocol.line(response)) ?? Array(#"{"ok":false,"error":"cannot encode the response"}"#.utf8)
        line.append(UInt8(ascii: "\n"))
        try await client.write(line, deadline: .now + .seconds(5))
    }

    /// Why a line is not a request: unknown request names are told apart from broken JSON.
    static func explainBadRequest(_ line: [UInt8]) -> String {
        let known = ControlRequest.Kind.allCases.map(\.rawValue).joined(separator: ", ")
        if let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] {
            if let name = object["request"] as? String { return "unknown request '\(name)'; known: \(known)" }
            return "a request needs a \"request\" field (one of: \(known))"
        }
        return "not a JSON object: send one {\"request\": ...} per line"
    }
}
