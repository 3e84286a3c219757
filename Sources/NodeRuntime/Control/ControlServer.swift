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
                if let request = try? ControlProtocol.decoder.decode(ControlRequest.self, from: Data(line)) {
                    response = await node.respond(to: request)
                } else {
                    response = .failure(Self.explainBadRequest(line))
                }
                guard (try? await reply(response, to: client)) != nil else { return }
            }
        }
    }

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
