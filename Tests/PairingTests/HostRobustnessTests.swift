import Dispatch
import Foundation
import Sodium
import Synchronization
import TestSupport
import Testing
import Transport

@testable import Pairing

/// Peers that are not honest guests, and closures that fail.
@Suite("Pairing host robustness", .serialized)
struct HostRobustnessTests {
    /// Generous: the host answers at once, but shares two cores with the rest of the suite, and
    /// what this suite checks is what the host does, not how fast.
    func deadline() -> ContinuousClock.Instant { .now + .seconds(30) }

    func connect(to host: PairingHost) async throws -> TCPConnection {
        try await TCPConnection.connect(host: "127.0.0.1", port: host.port, timeout: .seconds(5))
    }

    func readFrame(_ connection: TCPConnection) async throws -> [UInt8] {
        let header = try await connection.readExactly(4, deadline: deadline())
        let length = header.reduce(0) { $0 << 8 | Int($1) }
        return try await connection.readExactly(length, deadline: deadline())
    }

    func frame(_ payload: [UInt8]) -> [UInt8] {
        withUnsafeBytes(of: UInt32(payload.count).bigEndian) { Array($0) } + payload
    }

    /// Waits until the host closes `connection` (it reads end of stream, or a reset).
    func waitForClose(_ connection: TCPConnection) async throws {
        defer { connection.close() }
        while true {
            do {
                if try await connection.read(deadline: deadline()).isEmpty { return }
            } catch TransportError.connectionReset {
                return
            }
        }
    }

    @Test func garbagePeers_doNotCrashTheHostNorSpendTheCode() async throws {
        try await offThePool {
            let seed = SeededRandom.announce("garbagePeers")
            var random = SeededRandom(seed: seed)
            let code = PairingCode.generate()
            // The host outlives every step's deadline even when the suite's neighbours slow them all.
            let host = try PairingHost(code: code, beaconTargets: [], expiry: .seconds(180), maxWrongTries: 1, beaconPort: pairingTestPort(0))
            async let hostResult = onThread { try host.runRecording(welcome: [1], bundle: [2]) }

            // Random bytes right away.
            var noise = try await connect(to: host)
            try await noise.write((0..<1024).map { _ in UInt8.random(in: 0...255, using: &random) })
            try await waitForClose(noise)
            // A length prefix of 4 GiB after the hello.
            noise = try await connect(to: host)
            #expect(try await readFrame(noise).count == PairingHello.size)
            try await noise.write([0xff, 0xff, 0xff, 0xff] + [UInt8](repeating: 7, count: 100))
            try await waitForClose(noise)
            // A key share that is not a point.
            noise = try await connect(to: host)
            _ = try await readFrame(noise)
            try await noise.write(frame([UInt8](repeating: 0xff, count: 32)))
            try await waitForClose(noise)
            // The identity as the key share.
            noise = try await connect(to: host)
            _ = try await readFrame(noise)
            try await noise.write(frame([UInt8](repeating: 0, count: 32)))
            try await waitForClose(noise)
            // Connect and leave.
            try await connect(to: host).close()

            let guest = PairingGuest(
                invitation: PairingInvitation(code: code, address: HostPort(host: "127.0.0.1", port: host.port)), timeout: .seconds(30),
                beaconPort: pairingTestPort(0))
            #expect(try await onThread { try guest.runRecording(request: [3], done: [4]) }.get() == GuestRecord(welcome: [1], bundle: [2]))
            #expect(try await hostResult.get() == HostRecord(request: [3], done: [4]))
        }
    }

    /// Every thread of the concurrency pool blocked (as a busy process's tests or commands may
    /// block them) must not stall a pairing: its socket work runs on the event loop.
    @Test func aPairing_completesWhileEveryPoolThreadIsBlocked() async throws {
        let code = PairingCode.generate()
        let host = try PairingHost(code: code, beaconTargets: [], expiry: .seconds(30), maxWrongTries: 1, beaconPort: pairingTestPort(0))
        let guest = PairingGuest(
            invitation: PairingInvitation(code: code, address: HostPort(host: "127.0.0.1", port: host.port)), timeout: .seconds(10),
            beaconPort: pairingTestPort(0))

        // One blocker per pool thread (the pool is as wide as the machine has cores); each waits
        // for the pairing to end, so the pairing runs while none of the pool can.
        let poolWidth = ProcessInfo.processInfo.activeProcessorCount
        let blockersStarted = StartedCount()
        let pairingEnded = DispatchSemaphore(value: 0)
        let blockers = (0..<poolWidth).map { _ in
            Task.detached {
                blockersStarted.add()
                let ended = pairingEnded.wait(timeout: .now() + 20) == .success
                pairingEnded.signal()  // wake the next blocker
                return ended
            }
        }
        let outcome = await onThread {
            let deadline = ContinuousClock.now + .seconds(20)
            while blockersStarted.value < poolWidth, ContinuousClock.now < deadline {
                usleep(1_000)
            }
            let hostOutcome = ThreadOutcome<HostRecord>()
            Thread { hostOutcome.finish(Result { try host.runRecording(welcome: [1], bundle: [2]) }) }.start()
            let guestResult = Result { try guest.runRecording(request: [3], done: [4]) }
            let hostResult = hostOutcome.wait()
            pairingEnded.signal()
            return (try guestResult.get(), try hostResult.get())
        }
        var blockedThroughout = true
        for blocker in blockers { blockedThroughout = await blocker.value && blockedThroughout }
        let (guestRecord, hostRecord) = try outcome.get()
        #expect(guestRecord == GuestRecord(welcome: [1], bundle: [2]))
        #expect(hostRecord == HostRecord(request: [3], done: [4]))
        #expect(blockedThroughout, "the pairing ended only after the pool's threads were released")
    }

    /// How many blockers have started.
    final class StartedCount: Sendable {
        private let count = Atomic<Int>(0)
        var value: Int { count.load(ordering: .sequentiallyConsistent) }
        func add() { count.add(1, ordering: .sequentiallyConsistent) }
    }

    /// What a thread returned or threw, for another thread to wait on.
    final class ThreadOutcome<T: Sendable>: Sendable {
        private let result = Mutex<Result<T, any Error>?>(nil)
        private let ended = DispatchSemaphore(value: 0)

        func finish(_ outcome: Result<T, any Error>) {
            result.withLock { $0 = outcome }
            ended.signal()
        }

        func wait() -> Result<T, any Error> {
            ended.wait()
            return result.withLock { $0! }
        }
    }

    /// Plays a guest that does not know the code up to the host's sealed welcome: reads the
    /// hello, sends a key share of its own, and reads the host's share and the welcome.
    func takeWelcome(from host: PairingHost) async throws -> (peer: TCPConnection, share: [UInt8], welcome: [UInt8]) {
        let peer = try await connect(to: host)
        _ = try await readFrame(peer)
        try await peer.write(frame(Ristretto255.hashToGroup(Sodium.randomBytes(64))))
        return (peer, try await readFrame(peer), try await readFrame(peer))
    }

    @Test func aPeerThatTakesTheWelcomeAndLeaves_isAWrongTry() async throws {
        try await offThePool {
            let host = try PairingHost(
                code: PairingCode.generate(), beaconTargets: [], expiry: .seconds(30), maxWrongTries: 1, beaconPort: pairingTestPort(1))
            async let hostResult = onThread { try host.runRecording(welcome: [1], bundle: [2]) }
            let (peer, share, welcome) = try await takeWelcome(from: host)
            #expect(share.count == 32)  // the host's share
            #expect(welcome.count > 16)  // the sealed welcome, enough to test one guess
            peer.close()
            let error = pairingError(await hostResult)
            #expect(error == .spent(tries: 1))
            #expect(error?.description.hasPrefix("one try with a wrong code") == true)
        }
    }

    @Test func anOversizedSealedFrame_isRefusedWithoutReadingIt() async throws {
        try await offThePool {
            let host = try PairingHost(
                code: PairingCode.generate(), beaconTargets: [], expiry: .seconds(30), maxWrongTries: 1, beaconPort: pairingTestPort(2))
            async let hostResult = onThread { try host.runRecording(welcome: [1], bundle: [2]) }
            let peer = try await takeWelcome(from: host).peer
            try await peer.write(withUnsafeBytes(of: UInt32(PairingChannel.maxSealedFrameBytes + 1).bigEndian) { Array($0) })
            try await waitForClose(peer)
            #expect(pairingError(await hostResult) == .spent(tries: 1))
        }
    }

    @Test func errorsOfTheClosures_comeOutOfRunUnchanged() async throws {
        try await offThePool {
            let code = PairingCode.generate()
            let host = try PairingHost(code: code, beaconTargets: [], expiry: .seconds(30), maxWrongTries: 3, beaconPort: pairingTestPort(3))
            let invitation = PairingInvitation(code: code, address: HostPort(host: "127.0.0.1", port: host.port))
            async let hostResult = onThread {
                try host.run(welcome: [1], answer: { _ in throw CallerError(name: "answer") }, finished: { _ in })
            }
            let guest = PairingGuest(invitation: invitation, timeout: .seconds(10), beaconPort: pairingTestPort(3))
            let guestResult = await onThread { try guest.runRecording(request: [3], done: [4]) }
            let hostOutcome = await hostResult
            #expect(throws: CallerError(name: "answer")) { try hostOutcome.get() }
            #expect(pairingError(guestResult) != nil)

            let secondHost = try PairingHost(code: code, beaconTargets: [], expiry: .seconds(30), maxWrongTries: 3, beaconPort: pairingTestPort(3))
            let secondInvitation = PairingInvitation(code: code, address: HostPort(host: "127.0.0.1", port: secondHost.port))
            async let secondHostResult = onThread { try secondHost.runRecording(welcome: [1], bundle: [2]) }
            let secondGuest = PairingGuest(invitation: secondInvitation, timeout: .seconds(10), beaconPort: pairingTestPort(3))
            let requestResult = await onThread {
                try secondGuest.run(request: { _ in throw CallerError(name: "request") }, done: { $0 })
            }
            #expect(throws: CallerError(name: "request")) { try requestResult.get() }
            // The guest knew the code, so its leaving spends a try; with three allowed the host goes on until expiry.
            secondHost.listener.close()
            #expect(pairingError(await secondHostResult) != nil)
        }
    }
}
