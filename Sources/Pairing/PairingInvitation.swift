import Transport

/// What a new device needs to pair: the code, and where the host listens when beacons do not
/// reach (another subnet, a network that drops broadcast).
///
/// Three written forms are read: `CODE`, `CODE@HOST:PORT` and the URI
/// `parley:pair/CODE[@HOST:PORT]`. The URI is what a QR code carries: short, and still read
/// correctly when a scanner hands it back in uppercase (the scheme, the code and a numeric host
/// are case-insensitive).
public struct PairingInvitation: Sendable, Hashable {
    /// The URI's scheme and path prefix.
    static let uriPrefix = "parley:pair/"

    public let code: PairingCode
    public let address: HostPort?

    public init(code: PairingCode, address: HostPort?) {
        self.code = code
        self.address = address
    }

    /// Reads any of the three forms; the error names the form expected.
    public init(parsing text: String) throws(PairingError) {
        var rest = Substring(text.trimmingWhitespace)
        if rest.lowercased().hasPrefix(Self.uriPrefix) {
            rest = rest.dropFirst(Self.uriPrefix.count)
        } else if rest.lowercased().hasPrefix("parley:") {
            throw PairingError("\"\(text)\" is not a pairing link; it must start with \(Self.uriPrefix)")
        }
        let codeText: Substring
        var address: HostPort?
        if let at = rest.firstIndex(of: "@") {
            codeText = rest[..<at]
            let addressText = String(rest[rest.index(after: at)...])
            do {
                address = try HostPort(parsing: addressText)
            } catch {
                throw PairingError(
                    "\"\(addressText)\" is not an address; write CODE@HOST:PORT exactly as `parley device pair` prints it, e.g. xxxxx-xxxxx@192.168.1.20:40123")
            }
        } else {
            codeText = rest
        }
        guard let code = PairingCode(parsing: String(codeText)) else {
            throw PairingError(
                "\"\(codeText)\" is not a pairing code; a code is \(PairingCode.length) letters and digits, like xxxxx-xxxxx, as `parley device pair` shows it")
        }
        self.code = code
        self.address = address
    }

    /// `parley:pair/xxxxx-xxxxx` or `parley:pair/xxxxx-xxxxx@HOST:PORT`.
    public var uri: String {
        Self.uriPrefix + code.formatted + (address.map { "@\($0)" } ?? "")
    }
}

extension String {
    fileprivate var trimmingWhitespace: Substring {
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace }) else { return "" }
        return self[first...last]
    }
}
