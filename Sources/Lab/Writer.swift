import Foundation
import NodeRuntime
import Synchronization

/// Writes in flight. Each node has at most one `author` request outstanding, on a control
/// connection of its own (so the lab's other requests to it never overlap with a write); the
/// lab's loop launches writes and collects the answers on its next turn, so a node that answers
/// slowly delays only its own writes, never the faults, the samples or the other nodes.
final class Writer: Sendable {
    /// One answered (or failed) write.
    struct Outcome {
        let node: Int
        let request: AuthorRequest
        let sentAtMillis: UInt64
        let response: ControlResponse?
    }

    private struct State {
        var busy: Set<Int> = []
        var outcomes: [Outcome] = []
        var clients: [Int: ControlClient] = [:]
    }
    private let state = Mutex(State())

    /// Whether `node` has a write in flight.
    func isBusy(_ node: Int) -> Bool { state.withLock { $0.busy.contains(node) } }

    /// Sends `request` (placeholders already resolved in `resolved`) to the node of
    /// `dataDirectory` in the background.
    func launch(_ request: AuthorRequest, resolved: AuthorRequest, node: Int, dataDirectory: String, timeout: Duration) {
        state.withLock { _ = $0.busy.insert(node) }
        Task.detached { [self] in
            let sentAt = LabNode.nowMillis
            let response = await send(ControlRequest(.author, author: resolved), node: node, dataDirectory: dataDirectory, timeout: timeout)
            state.withLock {
                $0.outcomes.append(Outcome(node: node, request: request, sentAtMillis: sentAt, response: response))
                $0.busy.remove(node)
            }
        }
    }

    /// The outcomes since the last call, in the order they arrived.
    func collect() -> [Outcome] {
        state.withLock { state in
            defer { state.outcomes = [] }
            return state.outcomes
        }
    }

    /// Waits until no write is in flight (or `timeout`).
    func drain(timeout: Duration) async {
        let deadline = ContinuousClock.now + timeout
        while state.withLock({ !$0.busy.isEmpty }), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Forgets `node`'s connection (it was killed or restarted).
    func reset(_ node: Int) {
        let client = state.withLock { $0.clients.removeValue(forKey: node) }
        client?.close()
    }

    private func send(_ request: ControlRequest, node: Int, dataDirectory: String, timeout: Duration) async -> ControlResponse? {
        var client = state.withLock { $0.clients[node] }
        if client == nil {
            client = try? ControlClient.connect(dataDirectory: dataDirectory)
            state.withLock { [client] in $0.clients[node] = client }
        }
        guard let client else { return nil }
        do {
            return try await client.send(request, timeout: timeout)
        } catch {
            reset(node)
            return nil
        }
    }
}
