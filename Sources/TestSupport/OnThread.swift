import Foundation

/// Runs `body` on a thread of its own and returns what it returned or threw once it ends. For
/// work that blocks or computes for seconds (pairing's `run`, a simulation): on the cooperative
/// pool — one thread per core — it would starve every other test's tasks meanwhile.
public func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async -> Result<T, any Error> {
    await withCheckedContinuation { continuation in
        let thread = Thread {
            continuation.resume(returning: Result { try body() })
        }
        thread.start()
    }
}

/// `onThread` for work that cannot throw.
public func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread {
            continuation.resume(returning: body())
        }
        thread.start()
    }
}
