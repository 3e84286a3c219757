import Dispatch
import Foundation

/// Runs `body` on a thread of its own and returns what it returned or threw once it ends. For
/// work that blocks or computes for seconds (pairing's `run`, a simulation): on the cooperative
/// pool — one thread per core — it would starve every other test's tasks meanwhile.
///
/// `cores`: a computation that keeps that many cores busy (a simulation, a property test's
/// cases) waits until the process's other such computations leave it that many
/// (`ComputeBudget`), so they never run more threads than the machine has cores. Unbounded,
/// they starved the links, loops and pairing threads of the tests beside them past their
/// deadlines. Work that mostly waits (pairing's `run`) passes 0 and starts at once.
public func onThread<T: Sendable>(cores: Int = 0, _ body: @escaping @Sendable () throws -> T) async -> Result<T, any Error> {
    await withCheckedContinuation { continuation in
        let thread = Thread {
            ComputeBudget.shared.acquire(cores)
            defer { ComputeBudget.shared.release(cores) }
            continuation.resume(returning: Result { try body() })
        }
        thread.start()
    }
}

/// `onThread` for work that cannot throw.
public func onThread<T: Sendable>(cores: Int = 0, _ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread {
            ComputeBudget.shared.acquire(cores)
            defer { ComputeBudget.shared.release(cores) }
            continuation.resume(returning: body())
        }
        thread.start()
    }
}

/// The machine's cores, handed to the test process's long computations (`onThread(cores:)`).
/// Blocking: it runs on their own threads, never on the pool.
public final class ComputeBudget: Sendable {
    public static let shared = ComputeBudget(cores: ProcessInfo.processInfo.activeProcessorCount)

    public let cores: Int
    private let free: DispatchSemaphore
    /// Taken while a computation gathers its cores one by one, so two cannot each hold part of
    /// what both wait for.
    private let gathering = DispatchSemaphore(value: 1)

    init(cores: Int) {
        self.cores = max(1, cores)
        free = DispatchSemaphore(value: self.cores)
    }

    /// Waits until `count` cores (at most all of them) are free and takes them.
    func acquire(_ count: Int) {
        let count = min(count, cores)
        guard count > 0 else { return }
        gathering.wait()
        for _ in 0..<count { free.wait() }
        gathering.signal()
    }

    func release(_ count: Int) {
        for _ in 0..<min(count, cores) { free.signal() }
    }
}
