import Testing

@testable import Pairing
@testable import Transport

@Suite("Pairing codes and invitations")
struct CodeTests {
    @Test func generate_formatsAndParsesBack() throws {
        for _ in 0..<200 {
            let code = PairingCode.generate()
            let text = code.formatted
            #expect(text.count == 11 && text.dropFirst(5).first == "-")
            #expect(text.allSatisfy { $0 == "-" || PairingCode.alphabet.contains($0) })
            #expect(PairingCode(parsing: text) == code)
            #expect(PairingCode(parsing: text.uppercased()) == code)
            #expect(PairingCode(parsing: text.replacingDash(with: "")) == code)
            #expect(PairingCode(parsing: " " + text.replacingDash(with: " ") + " ") == code)
        }
    }

    @Test func alphabet_is32CharactersAnd50Bits() {
        #expect(Set(PairingCode.alphabet).count == 32)
        #expect(PairingCode.entropyBits == 50)
        for lookAlike: Character in ["i", "l", "o", "u"] { #expect(!PairingCode.alphabet.contains(lookAlike)) }
    }

    @Test func parse_mapsLookAlikes() {
        #expect(PairingCode(parsing: "oOiIl-Labcd") == PairingCode(parsing: "00111-1abcd"))
        #expect(PairingCode(parsing: "OOIIL-LABCD")?.formatted == "00111-1abcd")
    }

    @Test(arguments: ["", "abcde", "abcde-abcdef", "abcd-abcd", "abcde-abcdu", "abcde_abcde", "ábcde-abcde", "abcde-abcd!"])
    func parse_rejectsBadInput(text: String) {
        #expect(PairingCode(parsing: text) == nil)
    }

    @Test func description_doesNotShowTheCode() {
        let code = PairingCode(parsing: "abcde-fghjk")!
        #expect(!"\(code)".contains("abcde"))
        #expect(!String(describing: code).contains("fghjk"))
    }

    @Test func invitation_readsAllThreeForms() throws {
        let code = PairingCode(parsing: "abcde-fghjk")!
        let address = HostPort(host: "127.0.0.1", port: 40123)
        #expect(try PairingInvitation(parsing: "abcde-fghjk") == PairingInvitation(code: code, address: nil))
        #expect(try PairingInvitation(parsing: " ABCDEFGHJK ") == PairingInvitation(code: code, address: nil))
        #expect(try PairingInvitation(parsing: "abcde-fghjk@127.0.0.1:40123") == PairingInvitation(code: code, address: address))
        #expect(try PairingInvitation(parsing: "parley:pair/abcde-fghjk@127.0.0.1:40123") == PairingInvitation(code: code, address: address))
        #expect(try PairingInvitation(parsing: "PARLEY:PAIR/ABCDE-FGHJK@127.0.0.1:40123") == PairingInvitation(code: code, address: address))
        #expect(try PairingInvitation(parsing: "parley:pair/abcde-fghjk") == PairingInvitation(code: code, address: nil))
        #expect(
            try PairingInvitation(parsing: "abcde-fghjk@[::1]:7") == PairingInvitation(code: code, address: HostPort(host: "::1", port: 7)))
    }

    @Test func invitation_uriIsShortAndReadsBack() throws {
        let code = PairingCode.generate()
        for address in [nil, HostPort(host: "127.0.0.1", port: 40123), HostPort(host: "::1", port: 7)] {
            let invitation = PairingInvitation(code: code, address: address)
            #expect(invitation.uri.hasPrefix("parley:pair/\(code.formatted)"))
            #expect(invitation.uri.count <= 60)
            #expect(try PairingInvitation(parsing: invitation.uri) == invitation)
            #expect(try PairingInvitation(parsing: invitation.uri.uppercased()) == invitation)
        }
        #expect(PairingInvitation(code: code, address: HostPort(host: "127.0.0.1", port: 40123)).uri == "parley:pair/\(code.formatted)@127.0.0.1:40123")
    }

    @Test(arguments: [
        ("abcde-fghjk@127.0.0.1", "CODE@HOST:PORT"),
        ("abcde-fghjk@", "CODE@HOST:PORT"),
        ("abcde-fghj@127.0.0.1:1", "not a pairing code"),
        ("@127.0.0.1:1", "not a pairing code"),
        ("parley:room/abcde-fghjk", "parley:pair/"),
        ("hello", "not a pairing code"),
    ])
    func invitation_rejectsBadFormsClearly(text: String, expected: String) {
        #expect {
            _ = try PairingInvitation(parsing: text)
        } throws: { error in
            let description = (error as? PairingError)?.description ?? ""
            return description.contains(expected) && !description.contains("\n")
        }
    }

    @Test func beacon_roundTripsAndRejectsMalformed() {
        let beacon = PairingBeacon(tag: Array("ab".utf8), port: 40123)
        #expect(beacon.encoded.count == PairingBeacon.size)
        #expect(PairingBeacon(decoding: beacon.encoded) == beacon)
        #expect(PairingBeacon(decoding: Array(beacon.encoded.dropLast())) == nil)
        #expect(PairingBeacon(decoding: beacon.encoded + [0]) == nil)
        var wrongVersion = beacon.encoded
        wrongVersion[8] = 2
        #expect(PairingBeacon(decoding: wrongVersion) == nil)
        var wrongMagic = beacon.encoded
        wrongMagic[0] = UInt8(ascii: "Q")
        #expect(PairingBeacon(decoding: wrongMagic) == nil)
        #expect(PairingBeacon(decoding: PairingBeacon(tag: Array("ab".utf8), port: 0).encoded) == nil)
    }

    @Test func errors_nameTheProblemAndTheFix() {
        #expect(
            PairingError.spent(tries: 3).description
                == "three tries with a wrong code: this code is spent; run `parley device pair` again for a new one")
        #expect(PairingError.expired(after: .seconds(300)).description == "the pairing code expired after 5 min; run `parley device pair` again")
        #expect(PairingError.expired(after: .seconds(1)).description.contains("after 1 s"))
        let code = PairingCode(parsing: "abcde-fghjk")!
        #expect(PairingError.nothingHeard(code, after: .seconds(60)).description.hasPrefix("heard no device offering code abcde-… on this network in 1 min"))
    }
}

extension String {
    fileprivate func replacingDash(with replacement: String) -> String {
        split(separator: "-").joined(separator: replacement)
    }
}
