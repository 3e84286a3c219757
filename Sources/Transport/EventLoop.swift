import CEpoll
import Glibc
import Synchronization

/// What a socket waits for, and what the event loop reports as ready.
struct IOInterest: OptionSet, Sendable, Hashable {
    let rawValue: UInt8
    static let read = IOInterest(rawValue: 1)
    static let write = IOInterest(rawValue: 2)
}

/// A socket object the event loop tells about readiness.
///
/// `handleIO` runs on the loop's thread with no loop lock held. It must not block: it performs
/// non-blocking system calls under the object's own lock and resumes continuations.
protocol IOEventHandler: AnyObject, Sendable {
    func handleIO(_ ready: IOInterest)
}

/// An I/O thread: waits with `epoll(7)` until a registered descriptor is ready or a timer is
/// due, then calls the descriptor's handler or the timer's action, and runs the jobs of the
/// actors and tasks that use it as their executor (`EventLoop+Executor.swift`).
///
/// A node has a loop of its own (`Node.loop`): its sockets, its actor and its link tasks, and
/// nothing else. `shared` serves every other socket of the process (control clients, a test's
/// harness). Why not one loop for all: the node's work runs on its loop's thread, so a second
/// node in the same process (the in-process tests) or a client of the node would wait for it —
/// a handshake or a read stalled behind another node's commit.
///
/// The thread runs while the loop has work — a registered descriptor, a timer or a job — and
/// ends when it has none; the next registration, timer or job starts a new one. A stopped
/// node's loop so holds no thread, and a loop needs no explicit shutdown.
///
/// Why epoll: a wake-up costs the loop the descriptors that are ready, not all it watches. With
/// `poll(2)` every wake-up handed the kernel the whole set, which registered a wait on each
/// socket and removed it again: 4% of a node's CPU in the 10-node latency benchmark, with ten
/// descriptors. The Glibc module exports no `epoll_*`, so `CEpoll` wraps
/// it; libdispatch's sources were the other choice, and a descriptor may be closed only after
/// such a source's cancel handler has run — easy to get wrong, fd by fd.
///
/// Descriptors are watched only while their object has an interest (a parked reader, queued
/// bytes, a pending connect): an idle node sleeps in `epoll_wait` with no timeout and burns no
/// CPU. Interest is level-triggered, so a wait armed after data arrived still fires, and no
/// wake-up is lost. A wider interest reaches the kernel at once (`epoll_ctl` from any thread
/// wakes a waiting `epoll_wait`); a narrower one only when the kernel next reports that
/// descriptor, so a reader that parks again after every read costs no system call. The loop
/// keeps handlers weakly: an object dropped without `close()` closes its descriptor in `deinit`.
public final class EventLoop: Sendable {
    /// The loop for every socket of the process that no node owns.
    public static let shared = EventLoop()

    /// A registered descriptor.
    struct Registration: Hashable, Sendable {
        fileprivate let id: UInt64
    }

    /// A scheduled timer, for `cancel(_:)`.
    public struct TimerID: Hashable, Sendable {
        fileprivate let id: UInt64
    }

    private struct Entry {
        let fd: Int32
        var interest: IOInterest = []
        /// What the kernel watches for: a superset of `interest` until the kernel next reports
        /// the descriptor; nil while the descriptor is not in the epoll set.
        var watched: IOInterest?
        weak var handler: (any IOEventHandler)?
    }

    private struct Timer {
        let id: UInt64
        let deadline: ContinuousClock.Instant
        let action: @Sendable () -> Void
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var timers: [Timer] = []  // earliest first
        var nextID: UInt64 = 1  // 0 is the wake-up pipe's key in the epoll set
        var isPolling = false
        var wakePending = false
        var iterations: UInt64 = 0
        /// Jobs of actors and tasks that run on this thread (`EventLoop+Executor.swift`).
        var jobs: [UnownedJob] = []
        /// Whether a thread runs the loop (or is starting to); see `startThreadIfNeeded`.
        var threadRunning = false

        /// Nothing for a thread to wait for or run.
        var isIdle: Bool { entries.isEmpty && timers.isEmpty && jobs.isEmpty }
    }

    private let state = Mutex(State())
    /// The loop's thread, once it runs (for `checkIsolated`).
    private let thread = Mutex<pthread_t?>(nil)
    /// The epoll instance: the watched descriptors, each under its registration's id.
    private let epoll: Int32
    /// A self-pipe: a byte written here interrupts `epoll_wait` when a timer or a job is added.
    private let wakeRead: Int32
    private let wakeWrite: Int32

    /// A loop with no thread yet: the first registration, timer or job starts it.
    public init() {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            preconditionFailure("Transport: cannot create the event loop's pipe: \(TransportError.message(for: errno))")
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        (wakeRead, wakeWrite) = (fds[0], fds[1])
        epoll = parley_epoll_create()
        guard epoll >= 0, parley_epoll_ctl(epoll, Int32(PARLEY_EPOLL_CTL_ADD), wakeRead, UInt32(PARLEY_EPOLLIN), 0) == 0 else {
            preconditionFailure("Transport: cannot create the event loop's epoll set: \(TransportError.message(for: errno))")
        }
    }

    deinit {
        // A running thread holds the loop, so none runs now.
        Glibc.close(epoll)
        Glibc.close(wakeRead)
        Glibc.close(wakeWrite)
    }

    /// Starts a thread for the loop unless one runs; called with the state locked whenever work
    /// is added, so work never waits for a thread that has decided to end.
    private func startThreadIfNeeded(_ state: inout State) {
        guard !state.threadRunning else { return }
        state.threadRunning = true
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()  // the thread holds the loop until it ends
        let status = pthread_create(
            &thread, nil,
            { context in
                let loop = Unmanaged<EventLoop>.fromOpaque(context!)
                loop.takeUnretainedValue().run()
                loop.release()
                return nil
            }, context)
        precondition(status == 0, "Transport: cannot start the event loop thread (error \(status))")
        pthread_detach(thread)
    }

    // MARK: Registrations

    /// A registration to `attach` once its handler exists (an object stores its registration
    /// before it can pass itself as the handler).
    func makeRegistration() -> Registration {
        state.withLock { state in
            defer { state.nextID += 1 }
            return Registration(id: state.nextID)
        }
    }

    /// Starts watching `fd` for `handler`, with no interest yet; the handler is held weakly.
    func attach(_ registration: Registration, fd: Int32, handler: any IOEventHandler) {
        state.withLock { state in
            state.entries[registration.id] = Entry(fd: fd, handler: handler)
            startThreadIfNeeded(&state)
        }
    }

    /// Watches the descriptor for `interest` from now on (none: stop watching it).
    func setInterest(_ registration: Registration, _ interest: IOInterest) {
        state.withLock { state in
            guard let position = state.entries.index(forKey: registration.id) else { return }
            state.entries.values[position].interest = interest
            // Only a wider interest needs the kernel now: what is watched and no longer wanted
            // is dropped when the kernel reports it (`run`).
            let watched = state.entries.values[position].watched
            if !interest.isSubset(of: watched ?? []) {
                watch(&state.entries.values[position], id: registration.id, for: interest)
            }
        }
    }

    /// Stops watching the descriptor; call before closing it, so the epoll set lets go of it
    /// at once (its number may be reused by the next socket).
    func deregister(_ registration: Registration) {
        state.withLock { state in
            guard var entry = state.entries.removeValue(forKey: registration.id) else { return }
            watch(&entry, id: registration.id, for: [])
            if state.isIdle { wakeIfPolling(&state) }  // the thread ends with its last work
        }
    }

    /// Makes the kernel watch `entry` for exactly `interest` (none: takes it out of the set).
    /// A descriptor already closed behind the loop's back fails here; it can report nothing,
    /// so it is simply no longer watched.
    private func watch(_ entry: inout Entry, id: UInt64, for interest: IOInterest) {
        if interest.isEmpty {
            if entry.watched != nil { _ = parley_epoll_ctl(epoll, Int32(PARLEY_EPOLL_CTL_DEL), entry.fd, 0, 0) }
            entry.watched = nil
            return
        }
        var events: UInt32 = 0
        if interest.contains(.read) { events |= UInt32(PARLEY_EPOLLIN) }
        if interest.contains(.write) { events |= UInt32(PARLEY_EPOLLOUT) }
        var status = parley_epoll_ctl(epoll, Int32(entry.watched == nil ? PARLEY_EPOLL_CTL_ADD : PARLEY_EPOLL_CTL_MOD), entry.fd, events, id)
        if status != 0, errno == EEXIST { status = parley_epoll_ctl(epoll, Int32(PARLEY_EPOLL_CTL_MOD), entry.fd, events, id) }
        entry.watched = status == 0 ? interest : nil
    }

    // MARK: Timers

    /// Runs `action` on the loop thread at `deadline` (at once if it has passed).
    public func schedule(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> TimerID {
        state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            let index = state.timers.firstIndex { $0.deadline > deadline } ?? state.timers.endIndex
            state.timers.insert(Timer(id: id, deadline: deadline, action: action), at: index)
            if index == 0 { wakeIfPolling(&state) }
            startThreadIfNeeded(&state)
            return TimerID(id: id)
        }
    }

    /// Cancels a timer; nothing happens if it already ran.
    public func cancel(_ timer: TimerID) {
        state.withLock { state in state.timers.removeAll { $0.id == timer.id } }
    }

    /// How many times the loop woke up: lets tests check that an idle loop sleeps.
    var iterationCount: UInt64 { state.withLock { $0.iterations } }

    /// Whether a thread runs the loop now: lets tests check that it ends with the loop's work.
    var hasThread: Bool { state.withLock { $0.threadRunning } }

    /// Whether the thread waits in `epoll_wait` now: it looked for work, found some to wait for,
    /// and did not end (lets tests check that a registration keeps the thread).
    var isWaiting: Bool { state.withLock { $0.isPolling } }

    // MARK: Jobs

    /// Queues a job to run on the loop's thread after the ready descriptors and due timers;
    /// wakes `epoll_wait` if the loop sleeps in it (a job queued by the loop's own thread needs no
    /// wake-up: the loop is not waiting then).
    func enqueueJob(_ job: UnownedJob) {
        state.withLock { state in
            state.jobs.append(job)
            wakeIfPolling(&state)
            startThreadIfNeeded(&state)
        }
    }

    /// Whether the caller runs on the loop's thread.
    var isLoopThread: Bool {
        thread.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    /// The most jobs run between two looks at the descriptors: a chain of jobs (each resuming
    /// the next) cannot keep the loop from the sockets and timers.
    private static let jobsPerRound = 256

    /// Runs the queued jobs, oldest first, up to `jobsPerRound`; true if more are queued.
    /// `batch` is the loop thread's buffer, kept between rounds: the queue and it trade
    /// storage, so a round allocates nothing.
    private func runJobs(_ batch: inout [UnownedJob]) -> Bool {
        var ran = 0
        while ran < Self.jobsPerRound {
            state.withLock { state in
                let count = min(state.jobs.count, Self.jobsPerRound - ran)
                if count == state.jobs.count {
                    swap(&batch, &state.jobs)
                } else {
                    batch.append(contentsOf: state.jobs[..<count])
                    state.jobs.removeFirst(count)
                }
            }
            if batch.isEmpty { return false }
            for job in batch {
                job.runSynchronously(isolatedTo: asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor())
            }
            ran += batch.count
            batch.removeAll(keepingCapacity: true)
        }
        return state.withLock { !$0.jobs.isEmpty }
    }

    private func wakeIfPolling(_ state: inout State) {
        guard state.isPolling, !state.wakePending else { return }
        state.wakePending = true
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)  // a full pipe already holds a wake-up: ignore EAGAIN
    }

    // MARK: The loop

    /// The most ready descriptors taken from one `epoll_wait`; more wait for the next round.
    private static let maxEventsPerWait = 64

    /// The thread's body: returns when the loop has no work left (`State.isIdle`).
    private func run() {
        thread.withLock { $0 = pthread_self() }
        // Buffers of the loop thread, kept across rounds so a wake-up allocates nothing.
        var keys = [UInt64](repeating: 0, count: Self.maxEventsPerWait)
        var events = [UInt32](repeating: 0, count: Self.maxEventsPerWait)
        var ready: [(any IOEventHandler, IOInterest)] = []
        var due: [@Sendable () -> Void] = []
        var jobs: [UnownedJob] = []
        var jobsLeft = false
        while true {
            let timeout: Int32? = state.withLock { state in
                if !jobsLeft, state.isIdle {
                    state.threadRunning = false
                    thread.withLock { $0 = nil }  // before a new thread can start and set it
                    return nil
                }
                if jobsLeft || !state.jobs.isEmpty { return 0 }
                state.isPolling = true
                return Self.milliseconds(until: state.timers.first?.deadline)
            }
            guard let timeout else { return }
            let count = Int(parley_epoll_wait(epoll, &keys, &events, Int32(Self.maxEventsPerWait), timeout))
            let waitError = errno
            var woken = false
            state.withLock { state in
                state.isPolling = false
                state.wakePending = false
                state.iterations += 1
                for index in 0..<max(count, 0) {
                    guard keys[index] != 0 else {
                        woken = true
                        continue
                    }
                    // The entry is read in place: a copy would copy its weak reference, an
                    // atomic operation per ready descriptor that showed in profiles.
                    guard let position = state.entries.index(forKey: keys[index]) else { continue }
                    // Errors and hang-ups wake both directions: the handler's call reports them.
                    let reported = Int32(bitPattern: events[index])
                    var kinds: IOInterest = []
                    if reported & Int32(PARLEY_EPOLLIN | PARLEY_EPOLLHUP | PARLEY_EPOLLERR) != 0 { kinds.insert(.read) }
                    if reported & Int32(PARLEY_EPOLLOUT | PARLEY_EPOLLHUP | PARLEY_EPOLLERR) != 0 { kinds.insert(.write) }
                    let interest = state.entries.values[position].interest
                    if state.entries.values[position].watched != interest {
                        // The kernel watches for more than is wanted now (a narrowed interest it
                        // was not told of): it watches for the interest alone from now on, so a
                        // level-triggered report of the rest stops. A hang-up, reported whatever
                        // is watched, costs no call.
                        watch(&state.entries.values[position], id: keys[index], for: interest)
                    }
                    kinds.formIntersection(interest)
                    if !kinds.isEmpty, let handler = state.entries.values[position].handler { ready.append((handler, kinds)) }
                }
                let now = ContinuousClock.now
                while let first = state.timers.first, first.deadline <= now {
                    due.append(state.timers.removeFirst().action)
                }
            }
            if woken {
                var sink = [UInt8](repeating: 0, count: 64)
                while read(wakeRead, &sink, sink.count) > 0 {}
            }
            if count < 0, waitError != EINTR {
                usleep(10_000)  // ENOMEM: back off rather than spin; the next round retries
            }
            for (handler, kinds) in ready { handler.handleIO(kinds) }
            ready.removeAll(keepingCapacity: true)
            for action in due { action() }
            due.removeAll(keepingCapacity: true)
            jobsLeft = runJobs(&jobs)
        }
    }

    /// The `epoll_wait` timeout for the next timer: -1 (none), else whole milliseconds, rounded up
    /// so a timer never fires early.
    private static func milliseconds(until deadline: ContinuousClock.Instant?) -> Int32 {
        guard let deadline else { return -1 }
        let remaining = deadline - .now
        guard remaining > .zero else { return 0 }
        let (seconds, attoseconds) = remaining.components
        let milliseconds = seconds * 1_000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: milliseconds)
    }
}
