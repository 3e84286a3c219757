import NodeRuntime
import Transport

/// What the node commands share: waiting for async work from a command's synchronous `run`,
/// and asking the running node over its control socket.
enum NodeConnection {
    /// Waits for async work from a command's synchronous `run` (`runBlocking`).
    static func wait<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T { try runBlocking(body) }

    /// The message for "no node runs for this data directory".
    static func noNode(_ directory: String) -> String {
        "no node is running for \(directory); start one with `parley run`"
    }

    /// Sends `request` to the node of `context`'s data directory and waits up to `timeout` for
    /// the answer; nil when no node runs.
    static func ask(_ request: ControlRequest, _ context: Context, timeout: Duration = .seconds(10)) throws(CLIError) -> ControlResponse? {
        let directory = try context.dataDirectory().path
        let response: ControlResponse
        do {
            response = try wait {
                let client = try ControlClient.connect(dataDirectory: directory)
                defer { client.close() }
                return try await client.send(request, timeout: timeout)
            }
        } catch ControlClientError.noNode {
            return nil
        } catch {
            throw .failure("cannot talk to the node of \(directory): \(error); is it overloaded? try again, or restart it")
        }
        guard response.ok else {
            throw .failure("the node of \(directory) refused the request: \(response.error ?? "no reason given")")
        }
        return response
    }

    /// Like `ask`, but a missing node is the failure "no node is running for DIR".
    static func require(_ request: ControlRequest, _ context: Context) throws(CLIError) -> ControlResponse {
        guard let response = try ask(request, context) else { throw .failure(noNode(try context.dataDirectory().path)) }
        return response
    }
}
