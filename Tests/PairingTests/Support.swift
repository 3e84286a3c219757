import Foundation
import Glibc
import TestSupport
import Testing
import Transport

@testable import Pairing

/// A UDP pairing port for one test of this run: below 10000 (other suites use 10000 and up, the
/// ephemeral range starts at 32768) and derived from the process id, so concurrent runs on one
/// host rarely meet; a stray beacon of another run is ignored for its tag anyway.
func pairingTestPort(_ slot: Int) -> UInt16 {
    UInt16(5_000 + Int(getpid()) % 1_000 * 5 + slot)
}

/// The pairing error a result failed with, or nil.
func pairingError<T>(_ result: Result<T, any Error>) -> PairingError? {
    if case .failure(let error) = result { return error as? PairingError }
    return nil
}

/// What the host's closures saw and sent in one pairing.
struct HostRecord: Sendable, Equatable {
    var request: [UInt8] = []
    var done: [UInt8] = []
}

/// What the guest's closures saw in one pairing.
struct GuestRecord: Sendable, Equatable {
    var welcome: [UInt8] = []
    var bundle: [UInt8] = []
}

/// An error of the caller's own, which `run` must let out unchanged.
struct CallerError: Error, Equatable {
    let name: String
}

extension PairingHost {
    /// `run` with fixed messages, recording what arrived.
    func runRecording(welcome: [UInt8], bundle: [UInt8]) throws -> HostRecord {
        var record = HostRecord()
        try run(
            welcome: welcome,
            answer: { request in
                record.request = request
                return bundle
            },
            finished: { record.done = $0 })
        return record
    }
}

extension PairingGuest {
    /// `run` with fixed messages, recording what arrived.
    func runRecording(request: [UInt8], done: [UInt8]) throws -> GuestRecord {
        var record = GuestRecord()
        try run(
            request: { welcome in
                record.welcome = welcome
                return request
            },
            done: { bundle in
                record.bundle = bundle
                return done
            })
        return record
    }
}

/// A code other than `code` that shares its beacon tag (its first two characters).
func codeSharingTag(with code: PairingCode) -> PairingCode {
    while true {
        let other = PairingCode.generate()
        let candidate = PairingCode(parsing: String(code.formatted.prefix(2)) + String(other.formatted.dropFirst(2)))!
        if candidate != code { return candidate }
    }
}

/// Runs a test's steps, and the child tasks they start (`async let`), on the shared event loop's
/// thread rather than the cooperative pool. The pool is as wide as the machine has cores, and the
/// suites beside these may hold it for half a minute (a CLI test blocks a pool thread until its
/// `parley` process ends): a host started by `async let` would not run meanwhile, and a step
/// that waited 20 s would meet the other side's frame timeout.
func offThePool<T: Sendable>(_ steps: () async throws -> T) async rethrows -> T {
    try await withTaskExecutorPreference(EventLoop.shared, operation: steps)
}
