/// A failure of pairing, as one line that names the problem and the fix (docs/DESIGN.md §6.1).
///
/// Errors thrown by the caller's closures are never wrapped in it: `run` lets them out as they are.
public struct PairingError: Error, CustomStringConvertible, Sendable, Equatable {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}

extension PairingError {
    /// The host saw `tries` guests fail the code.
    static func spent(tries: Int) -> PairingError {
        PairingError("\(spelled(tries)) with a wrong code: this code is spent; run `parley device pair` again for a new one")
    }

    /// The host's code expired before a guest paired.
    static func expired(after expiry: Duration) -> PairingError {
        PairingError("the pairing code expired after \(minutesOrSeconds(expiry)); run `parley device pair` again")
    }

    /// The host was cancelled before a guest paired.
    public static let cancelled = PairingError("the pairing was cancelled; start it again for a new code")

    /// The guest's code did not open the host's welcome.
    static let wrongCode = PairingError(
        "the code did not match the other device's (a typo, or another device's code); check it and try again")

    /// The guest heard no beacon with its code's tag.
    static func nothingHeard(_ code: PairingCode, after timeout: Duration) -> PairingError {
        PairingError(
            "heard no device offering code \(code.hint) on this network in \(minutesOrSeconds(timeout)): check the code, "
                + "or use CODE@HOST:PORT as `parley device pair` prints it")
    }

    /// The connection broke or the peer broke the protocol; `what` says how.
    static func broken(_ what: String) -> PairingError {
        PairingError("pairing with the other device failed: \(what); start the pairing again on both devices")
    }

    /// "three tries", "1 try", "12 tries".
    static func spelled(_ tries: Int) -> String {
        let words = ["no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
        let number = words.indices.contains(tries) ? words[tries] : "\(tries)"
        return tries == 1 ? "\(number) try" : "\(number) tries"
    }

    /// "5 min", "90 s", "1 s".
    static func minutesOrSeconds(_ duration: Duration) -> String {
        let seconds = Int((Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18).rounded())
        return seconds >= 60 && seconds % 60 == 0 ? "\(seconds / 60) min" : "\(seconds) s"
    }
}
