import Foundation
import Synchronization
import Testing

@testable import Transport

/// An actor that runs on an event loop's thread, as a node does on its own.
private actor LoopActor {
    nonisolated let loop: EventLoop
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    private(set) var count = 0

    init(on loop: EventLoop = EventLoop()) {
        self.loop = loop
    }

    func isOnLoopThread() -> Bool { loop.isLoopThread }

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

    /// Sets `started`, then holds the loop's thread — no `await` — until `release` is set or
    /// `limit` passed; true if released.
    func block(until release: Flag, limit: Duration, started: Flag) -> Bool {
        started.set()
        let deadline = ContinuousClock.now + limit
        while !release.isSet, ContinuousClock.now < deadline { usleep(1_000) }
        return release.isSet
    }

    func set(_ flag: Flag) { flag.set() }
}

private final class Flag: Sendable {
    private let value = Atomic(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set() { value.store(true, ordering: .releasing) }
}

/// Whether `operation` finishes within `limit`. It runs as its own task, and the caller polls,
/// so a hang fails the test instead of stopping the run. The task prefers a loop of its own, not
/// the cooperative pool: in a full test run, CPU-bound tests can hold every pool thread for tens
/// of seconds, and the limit is for the loop under test, not for them.
private func completes(within limit: Duration, _ operation: @escaping @Sendable () async -> Void) async -> Bool {
    let done = Flag()
    Task(executorPreference: EventLoop()) {
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
            let loop = actor.loop
            let answers = Mutex<[Bool]>([])
            let finished = await completes(within: .seconds(20)) {
                let onActor = await actor.isOnLoopThread()
                let preferring = await Task(executorPreference: loop) { loop.isLoopThread }.value
                let elsewhere = await Task.detached { loop.isLoopThread }.value
                answers.withLock { $0 = [onActor, preferring, elsewhere] }
            }
            #expect(finished)
            #expect(answers.withLock { $0 } == [true, true, false])
        }

        /// The loop sleeps in `epoll_wait` with no timeout when idle: a job queued from another
        /// thread must wake it, or the call would wait for the next socket event (forever here).
        @Test func jobsQueuedFromOtherThreads_wakeTheIdleLoop() async {
            let actor = LoopActor()
            let finished = await completes(within: .seconds(20)) {
                // Eight callers, each on a loop of its own; between calls a caller holds its
                // thread, so the actor's loop runs out of jobs and waits in `epoll_wait` again.
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<8 {
                        group.addTask(executorPreference: EventLoop()) {
                            for _ in 0..<100 {
                                await actor.increment()
                                usleep(200)
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
            let spinner = Task(executorPreference: actor.loop) { await actor.spin(until: stop) }
            // Due while the chain runs: only a loop that polls between rounds of jobs fires it.
            _ = actor.loop.schedule(at: .now + .milliseconds(20)) { stop.set() }
            let rounds = Mutex(0)
            let stopped = await completes(within: .seconds(20)) {
                let count = await spinner.value
                rounds.withLock { $0 = count }
            }
            stop.set()
            #expect(stopped, "the timer never fired while the loop ran a chain of jobs")
            #expect(rounds.withLock { $0 } > 0)
        }

        /// Each node has a loop of its own so that one node's work (a long commit) does not stall
        /// another's sockets in the same process, nor a client's: a loop held by a job must not
        /// keep another loop's jobs waiting. With one loop for both, the blocked job would wait
        /// out its limit.
        @Test func aLoopHeldByALongJob_keepsNoOtherLoopWaiting() async {
            let (busy, other) = (LoopActor(), LoopActor())
            let (release, started) = (Flag(), Flag())
            let blocked = Task { await busy.block(until: release, limit: .seconds(20), started: started) }
            // The busy loop's thread is held from here on: the other actor must still run.
            while !started.isSet { try? await Task.sleep(for: .milliseconds(1)) }
            await other.set(release)
            #expect(await blocked.value, "the other loop's job waited for the busy loop")
        }

        /// A loop's thread runs while it has work — a socket, a timer, a job — and ends with its
        /// last: a stopped node's loop holds no thread. The next job or socket starts a new one.
        @Test func aLoopsThread_endsWithItsLastWork_andTheNextStartsAnother() async throws {
            let actor = LoopActor()
            let loop = actor.loop
            #expect(!loop.hasThread, "a new loop started a thread before it had work")
            #expect(await actor.isOnLoopThread())
            #expect(await ends(loop), "the thread outlived the loop's last job")

            let socket = try UDPSocket(host: "127.0.0.1", port: 0, broadcast: false, loop: loop)
            #expect(loop.hasThread, "a registered socket started no thread")
            // The thread ends only when it looks for work and finds none: once it waits for the
            // socket instead, it has looked and stayed.
            #expect(await eventually { loop.isWaiting }, "the thread ended while a socket was registered")
            #expect(loop.hasThread, "the thread ended while a socket was registered")
            socket.close()
            #expect(await ends(loop), "the thread outlived the loop's last socket")

            #expect(await actor.isOnLoopThread(), "a job on a loop whose thread ended did not run on its new thread")
            await actor.increment()
            #expect(await actor.count == 1)
        }
    }
}

/// Whether `loop`'s thread ends within 20 s (polled).
private func ends(_ loop: EventLoop) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(20)
    while loop.hasThread, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(2)) }
    return !loop.hasThread
}
