import Foundation
import Synchronization
import Testing

@testable import Transport

/// An actor that runs on the event loop's thread, as a node does.
private actor LoopActor {
    nonisolated var unownedExecutor: UnownedSerialExecutor { EventLoop.shared.asUnownedSerialExecutor() }

    private(set) var count = 0

    func isOnLoopThread() -> Bool { EventLoop.shared.isLoopThread }

    func increment() { count += 1 }

    /// Yields (each yield queues the actor's job again) until `stop` is set: a chain of jobs
    /// that never runs out by itself.
    func spin(until stop: Flag) async -> Int {
        var rounds = 0
        while !stop.isSet {
            await Task.yield()
            rounds += 1
        }
        return rounds
    }
}

private final class Flag: Sendable {
    private let value = Atomic(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set() { value.store(true, ordering: .releasing) }
}

/// Whether `operation` finishes within `limit`. It runs as its own task, and the caller polls,
/// so a hang fails the test instead of stopping the run.
private func completes(within limit: Duration, _ operation: @escaping @Sendable () async -> Void) async -> Bool {
    let done = Flag()
    Task {
        await operation()
        done.set()
    }
    let deadline = ContinuousClock.now + limit
    while !done.isSet, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(5)) }
    return done.isSet
}

extension TransportTests {
    @Suite struct ExecutorTests {
        @Test func anActorOnTheLoop_runsOnTheLoopsThread_andSoDoesATaskThatPrefersIt() async {
            let actor = LoopActor()
            let answers = Mutex<[Bool]>([])
            let finished = await completes(within: .seconds(20)) {
                let onActor = await actor.isOnLoopThread()
                let preferring = await Task(executorPreference: EventLoop.shared) { EventLoop.shared.isLoopThread }.value
                let elsewhere = await Task.detached { EventLoop.shared.isLoopThread }.value
                answers.withLock { $0 = [onActor, preferring, elsewhere] }
            }
            #expect(finished)
            #expect(answers.withLock { $0 } == [true, true, false])
        }

        /// The loop sleeps in `poll` with no timeout when idle: a job queued from another
        /// thread must wake it, or the call would wait for the next socket event (forever here).
        @Test func jobsQueuedFromOtherThreads_wakeTheIdleLoop() async {
            let actor = LoopActor()
            let finished = await completes(within: .seconds(20)) {
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<8 {
                        group.addTask {
                            for _ in 0..<100 {
                                await actor.increment()
                                try? await Task.sleep(for: .microseconds(200))
                            }
                        }
                    }
                }
            }
            #expect(finished, "calls from pool threads to an actor on the loop did not finish")
            #expect(await actor.count == 800)
        }

        /// Jobs that keep queuing more (a task that yields in a loop) must not keep the loop from
        /// its descriptors and timers (polled in the same step): a timer still fires while they
        /// run, and stops them.
        @Test func aChainOfJobs_leavesTheLoopToItsTimersAndSockets() async {
            let actor = LoopActor()
            let stop = Flag()
            // Preferring the loop, the task yields straight back to it (not by way of the pool).
            let spinner = Task(executorPreference: EventLoop.shared) { await actor.spin(until: stop) }
            // Due while the chain runs: only a loop that polls between rounds of jobs fires it.
            _ = EventLoop.shared.schedule(at: .now + .milliseconds(20)) { stop.set() }
            let rounds = Mutex(0)
            let stopped = await completes(within: .seconds(20)) {
                let count = await spinner.value
                rounds.withLock { $0 = count }
            }
            stop.set()
            #expect(stopped, "the timer never fired while the loop ran a chain of jobs")
            #expect(rounds.withLock { $0 } > 0)
        }
    }
}
