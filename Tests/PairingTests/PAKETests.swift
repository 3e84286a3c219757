import Sodium
import Testing

@testable import Pairing

@Suite("Pairing PAKE and ristretto255")
struct PAKETests {
    /// Both sides' keys for one session, the guest using `guestCode`.
    func keys(host hostCode: PairingCode, guest guestCode: PairingCode) throws -> (host: PairingKeys, guest: PairingKeys) {
        let sessionID = Sodium.randomBytes(PairingPAKE.sessionIDBytes)
        let hostShare = PairingPAKE.Share(generator: PairingPAKE.generator(code: hostCode, sessionID: sessionID))
        let guestShare = PairingPAKE.Share(generator: PairingPAKE.generator(code: guestCode, sessionID: sessionID))
        let host = try PairingPAKE.keys(
            share: hostShare, peerShare: guestShare.publicShare, sessionID: sessionID, guestShare: guestShare.publicShare,
            hostShare: hostShare.publicShare)
        let guest = try PairingPAKE.keys(
            share: guestShare, peerShare: hostShare.publicShare, sessionID: sessionID, guestShare: guestShare.publicShare,
            hostShare: hostShare.publicShare)
        return (host, guest)
    }

    @Test func sameCode_sameKeys_wrongCode_otherKeys() throws {
        let code = PairingCode.generate()
        let right = try keys(host: code, guest: code)
        #expect(right.host.hostToGuest == right.guest.hostToGuest)
        #expect(right.host.guestToHost == right.guest.guestToHost)
        #expect(right.host.hostToGuest != right.host.guestToHost)
        let wrong = try keys(host: code, guest: PairingCode.generate())
        #expect(wrong.host.hostToGuest != wrong.guest.hostToGuest)
    }

    @Test func sealedDirection_refusesReplayReorderAndReflection() throws {
        let code = PairingCode.generate()
        let pair = try keys(host: code, guest: code)
        var send = SealedDirection(key: pair.host.hostToGuest, label: PairingHello.hostToGuestLabel)
        var receive = SealedDirection(key: pair.guest.hostToGuest, label: PairingHello.hostToGuestLabel)
        let first = send.seal([1]), second = send.seal([2])
        #expect(throws: SodiumError.decryptionFailed) { _ = try receive.open(second) }
        #expect(try receive.open(first) == [1])
        #expect(throws: SodiumError.decryptionFailed) { _ = try receive.open(first) }
        var reflected = SealedDirection(key: pair.host.hostToGuest, label: PairingHello.guestToHostLabel)
        #expect(throws: SodiumError.decryptionFailed) { _ = try reflected.open(second) }
        #expect(try receive.open(second) == [2])
    }

    @Test func ristretto_refusesIdentityAndInvalidPoints() {
        let identity = [UInt8](repeating: 0, count: 32)
        #expect(throws: SodiumError.invalidPublicKey) { _ = try Ristretto255.scalarMult(Ristretto255.randomScalar(), identity) }
        let point = Ristretto255.hashToGroup(Sodium.randomBytes(64))
        #expect(Ristretto255.isValidPoint(point))
        #expect(!Ristretto255.isValidPoint([UInt8](repeating: 0xff, count: 32)))
        #expect(!Ristretto255.isValidPoint(Array(point.dropLast())))
        // a·(b·G) == b·(a·G)
        let a = Ristretto255.randomScalar(), b = Ristretto255.randomScalar()
        let ab = try? Ristretto255.scalarMult(a, Ristretto255.scalarMult(b, point).bytes)
        let ba = try? Ristretto255.scalarMult(b, Ristretto255.scalarMult(a, point).bytes)
        #expect(ab != nil && ab == ba)
    }
}
