import Dispatch
import Synchronization

/// Runs `body` on the concurrency pool and blocks the calling thread until it finishes: how
/// synchronous code (a command's `run`, a pairing) waits for the async socket work below it.
/// The calling thread must not be one of the pool's: blocking it could starve the work it
/// waits for.
public func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let result = Mutex<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
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
