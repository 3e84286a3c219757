import Dispatch
import Synchronization

/// Runs `body` in a task and blocks the calling thread until it finishes: how synchronous code
/// (a command's `run`, a pairing, the bench's top level) waits for the async work below it.
///
/// The task runs on `executor` when one is given, else on the concurrency pool. The calling
/// thread must not be one of the pool's: blocking it could starve the work it waits for. Code
/// that may run beside other work blocking pool threads (a pairing in a busy process) passes an
/// event loop, so its socket waits never queue behind that work.
public func runBlocking<T: Sendable>(on executor: (any TaskExecutor)? = nil, _ body: @escaping @Sendable () async throws -> T) throws -> T {
    let result = Mutex<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task(executorPreference: executor) {
        let outcome: Result<T, any Error>
        do {
            outcome = .success(try await body())
        } catch {
            outcome = .failure(error)
        }
        result.withLock { $0 = outcome }
        done.signal()
    }
    done.wait()
    return try result.withLock { $0! }.get()
}
