import Foundation
import Subprocess
import Synchronization

/// Everything a lab run created that must not outlive it: node processes and network
/// namespaces. The runner registers each as it makes it; `removeAll` (at the end, on an error,
/// or from SIGINT/SIGTERM) kills and deletes them. Thread-safe: the signal path runs on a
/// Dispatch queue while the run goes on.
public final class LabCleanup: Sendable {
    private struct Tracked {
        var processes: [Int32: ChildProcess] = [:]
        var namespaces: [String] = []
    }
    private let tracked = Mutex(Tracked())

    public init() {}

    func track(_ process: ChildProcess) {
        tracked.withLock { $0.processes[process.pid] = process }
    }

    func forget(_ process: ChildProcess) {
        _ = tracked.withLock { $0.processes.removeValue(forKey: process.pid) }
    }

    func track(namespace: String) {
        tracked.withLock { $0.namespaces.append(namespace) }
    }

    /// Kills every tracked process (SIGCONT first, so a paused one can die) and deletes every
    /// namespace, once.
    public func removeAll() {
        let (children, names) = tracked.withLock { tracked -> ([ChildProcess], [String]) in
            defer { tracked = Tracked() }
            return (Array(tracked.processes.values), tracked.namespaces)
        }
        for child in children {
            child.kill(SIGCONT)
            child.kill(SIGKILL)
        }
        for name in names.reversed() { Namespaces.delete(name) }
    }
}
