import Foundation
import Subprocess

/// Everything a lab run created that must not outlive it: node processes and network
/// namespaces. The runner registers each as it makes it; `removeAll` (at the end, on an error,
/// or from SIGINT/SIGTERM) kills and deletes them. Thread-safe: the signal path runs on a
/// Dispatch queue while the run goes on.
public final class LabCleanup: @unchecked Sendable {
    private let lock = NSLock()
    private var processes: [Int32: ChildProcess] = [:]
    private var namespaces: [String] = []
    private var removed = false

    public init() {}

    func track(_ process: ChildProcess) {
        lock.withLock { processes[process.pid] = process }
    }

    func forget(_ process: ChildProcess) {
        _ = lock.withLock { processes.removeValue(forKey: process.pid) }
    }

    func track(namespace: String) {
        lock.withLock { namespaces.append(namespace) }
    }

    /// Kills every tracked process (SIGCONT first, so a paused one can die) and deletes every
    /// namespace, once.
    public func removeAll() {
        let (children, names) = lock.withLock { () -> ([ChildProcess], [String]) in
            defer {
                processes = [:]
                namespaces = []
            }
            return (Array(processes.values), namespaces)
        }
        for child in children {
            child.kill(SIGCONT)
            child.kill(SIGKILL)
        }
        for name in names.reversed() { Namespaces.delete(name) }
    }
}
