import Synchronization
import TestSupport
import Testing

/// Long computations share the machine's cores: never more of them at once than it has, and one
/// that needs every core waits for the rest and holds them alone.
@Suite struct ComputeBudgetTests {
    @Test func computations_neverOutnumberTheCores() async {
        let cores = ComputeBudget.shared.cores
        let running = Running()
        @Sendable func compute() {
            running.state.withLock {
                $0.now += 1; $0.most = max($0.most, $0.now)
            }
            // Long enough that the others started meanwhile if nothing held them back.
            var spin = 0
            let deadline = ContinuousClock.now + .milliseconds(50)
            while ContinuousClock.now < deadline { spin &+= 1 }
            running.state.withLock { $0.now -= 1 }
        }
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<(2 * cores + 2) { group.addTask { await onThread(cores: 1) { compute() } } }
            group.addTask { await onThread(cores: cores) { compute() } }
        }
        #expect(running.state.withLock { $0.most } <= cores)
        #expect(running.state.withLock { $0.now } == 0)
    }
}

private final class Running: Sendable {
    let state = Mutex((now: 0, most: 0))
}
