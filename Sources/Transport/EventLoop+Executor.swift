import Glibc

/// The event loop as an executor: a node's actor and its link tasks run on the loop's thread.
///
/// Why: with the node on the cooperative pool, every message crossed three threads — the loop
/// thread saw the socket ready, a pool thread ran the link's read and the node's handling, and
/// the next read's interest woke the loop again through its pipe. `perf stat` counted about
/// eight context switches per delivered op on a 10-node cluster, and the hand-offs cost more CPU
/// than the delivery itself. On the loop's thread, a ready socket resumes its reader, the reader
/// hands the node its messages, and the node's answers are written, all before the next `epoll_wait`.
///
/// An actor uses it with `nonisolated var unownedExecutor { loop.asUnownedSerialExecutor() }`
/// (`Node` with its own `loop`); a task whose nonisolated code (a link's read loop) should stay
/// on it is started with `Task(executorPreference: loop)`, and the sockets it reads are made with
/// `loop:`. Work on this thread must not block: a long computation delays every socket and job
/// of the loop.
extension EventLoop: SerialExecutor, TaskExecutor {
    public func enqueue(_ job: consuming ExecutorJob) {
        enqueueJob(UnownedJob(job))
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    public func checkIsolated() {
        precondition(isLoopThread, "expected to run on the event loop's thread")
    }
}
