import Foundation
import Synchronization
import Testing

/// Threads of their own for the command-line suites, which block while a `parley` process runs.
///
/// Why: a synchronous test runs on the cooperative pool, which is as wide as the machine has
/// cores. Two CLI tests waiting for their processes held both threads of a 2-core machine, and
/// for half a minute at a time no other test of the process could take a step: a pairing host
/// started with `async let` did not run, and its peer's 30 s read timed out. On these threads a
/// waiting command holds up only the next command test.
final class CommandThreads: TaskExecutor, Sendable {
    /// As many threads as cores: the CLI suites start as many `parley` processes at once as
    /// they did on the pool.
    static let shared = CommandThreads(count: ProcessInfo.processInfo.activeProcessorCount)

    private let jobs = Mutex<[UnownedJob]>([])
    private let queued = DispatchSemaphore(value: 0)

    private init(count: Int) {
        for _ in 0..<max(1, count) {
            Thread { [self] in
                while true {
                    queued.wait()
                    let job = jobs.withLock { $0.removeFirst() }
                    job.runSynchronously(on: asUnownedTaskExecutor())
                }
            }.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
        queued.signal()
    }
}

/// Runs a suite's tests on `CommandThreads` (`@Suite(.onCommandThreads)`).
struct CommandThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(CommandThreads.shared) { try await function() }
    }
}

extension Trait where Self == CommandThreadsTrait {
    /// The suite's tests run on threads of their own, not the cooperative pool (`CommandThreads`).
    static var onCommandThreads: Self { Self() }
}
