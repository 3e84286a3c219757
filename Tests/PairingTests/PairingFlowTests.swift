import Sodium
import TestSupport
import Testing
import Transport

@testable import Pairing

/// Hosts and guests in one process over loopback; every wait has a deadline (the frames' 20 s,
/// the host's expiry, the guest's timeout). Serialized: the expiry test measures time, which
/// parallel pairings on two cores would disturb.
@Suite("Pairing over loopback", .serialized)
struct PairingFlowTests {
    static let broadcast = "127.255.255.255"

    @Test func pair_byBeacon_deliversEveryMessageIntact_including1MiBBundle() async throws {
        try await offThePool {
            let port = pairingTestPort(0)
            let code = PairingCode.generate()
            let host = try PairingHost(code: code, beaconTargets: [Self.broadcast], expiry: .seconds(30), maxWrongTries: 3, beaconPort: port)
            let guest = PairingGuest(invitation: PairingInvitation(code: code, address: nil), timeout: .seconds(10), beaconPort: port)
            let welcome = Sodium.randomBytes(100), request = Sodium.randomBytes(2_000)
            let bundle = Sodium.randomBytes(1 << 20), done = Sodium.randomBytes(64)

            let start = ContinuousClock.now
            async let hostResult = onThread { try host.runRecording(welcome: welcome, bundle: bundle) }
            async let guestResult = onThread { try guest.runRecording(request: request, done: done) }
            let (hosted, guested) = await (hostResult, guestResult)
            print("paired by beacon with a 1 MiB bundle in \(ContinuousClock.now - start)")

            #expect(try hosted.get() == HostRecord(request: request, done: done))
            #expect(try guested.get() == GuestRecord(welcome: welcome, bundle: bundle))
        }
    }

    @Test func pair_byAddress_withoutBeacons() async throws {
        try await offThePool {
            let code = PairingCode.generate()
            let host = try PairingHost(code: code, beaconTargets: [], expiry: .seconds(30), maxWrongTries: 3, beaconPort: pairingTestPort(1))
            let invitation = try PairingInvitation(parsing: "\(code.formatted)@127.0.0.1:\(host.port)")
            let guest = PairingGuest(invitation: invitation, timeout: .seconds(10), beaconPort: pairingTestPort(1))
            let start = ContinuousClock.now
            async let hostResult = onThread { try host.runRecording(welcome: [1], bundle: Sodium.randomBytes(1 << 20)) }
            async let guestResult = onThread { try guest.runRecording(request: [2], done: []) }
            let (hosted, guested) = await (hostResult, guestResult)
            print("paired by address with a 1 MiB bundle in \(ContinuousClock.now - start)")
            #expect(try hosted.get() == HostRecord(request: [2], done: []))
            #expect(try guested.get().welcome == [1])
            #expect(try guested.get().bundle.count == 1 << 20)
        }
    }

    @Test func wrongCode_isToldToTheGuest_andThreeWrongTriesSpendTheCode() async throws {
        try await offThePool {
            let code = PairingCode.generate()
            let host = try PairingHost(code: code, beaconTargets: [], expiry: .seconds(30), maxWrongTries: 3, beaconPort: pairingTestPort(2))
            async let hostResult = onThread { try host.runRecording(welcome: [1], bundle: [2]) }
            for _ in 0..<3 {
                let wrong = PairingInvitation(code: PairingCode.generate(), address: HostPort(host: "127.0.0.1", port: host.port))
                let guest = PairingGuest(invitation: wrong, timeout: .seconds(10), beaconPort: pairingTestPort(2))
                let result = await onThread { try guest.runRecording(request: [3], done: [4]) }
                #expect(pairingError(result) == .wrongCode)
            }
            #expect(pairingError(await hostResult) == .spent(tries: 3))
            #expect(PairingError.spent(tries: 3).description.hasPrefix("three tries with a wrong code: this code is spent"))
        }
    }

    @Test func rightCode_afterOneWrongTryByBeacon_stillPairs() async throws {
        try await offThePool {
            let port = pairingTestPort(3)
            let code = PairingCode.generate()
            let host = try PairingHost(code: code, beaconTargets: [Self.broadcast], expiry: .seconds(30), maxWrongTries: 3, beaconPort: port)
            async let hostResult = onThread { try host.runRecording(welcome: [1], bundle: [2]) }
            // Same tag, so it hears this host's beacons and tries it.
            let wrong = PairingGuest(invitation: PairingInvitation(code: codeSharingTag(with: code), address: nil), timeout: .seconds(10), beaconPort: port)
            #expect(pairingError(await onThread { try wrong.runRecording(request: [3], done: [4]) }) == .wrongCode)
            let right = PairingGuest(invitation: PairingInvitation(code: code, address: nil), timeout: .seconds(10), beaconPort: port)
            #expect(try await onThread { try right.runRecording(request: [3], done: [4]) }.get() == GuestRecord(welcome: [1], bundle: [2]))
            #expect(try await hostResult.get() == HostRecord(request: [3], done: [4]))
        }
    }

    @Test func expiry_endsAHostNobodyPairsWith() async throws {
        try await offThePool {
            let host = try PairingHost(
                code: PairingCode.generate(), beaconTargets: [Self.broadcast], expiry: .seconds(1), maxWrongTries: 3, beaconPort: pairingTestPort(4))
            let start = ContinuousClock.now
            let result = await onThread { try host.runRecording(welcome: [1], bundle: [2]) }
            let elapsed = ContinuousClock.now - start
            #expect(pairingError(result) == .expired(after: .seconds(1)))
            #expect(pairingError(result)?.description == "the pairing code expired after 1 s; run `parley device pair` again")
            #expect(elapsed >= .seconds(1) && elapsed < .seconds(5))
        }
    }

    @Test func guest_thatHearsNothing_saysHowToUseTheAddress() async {
        await offThePool {
            let code = PairingCode.generate()
            let guest = PairingGuest(invitation: PairingInvitation(code: code, address: nil), timeout: .seconds(1), beaconPort: pairingTestPort(2))
            let error = pairingError(await onThread { try guest.runRecording(request: [], done: []) })
            #expect(error == .nothingHeard(code, after: .seconds(1)))
            #expect(error?.description.contains("CODE@HOST:PORT") == true)
        }
    }
}
