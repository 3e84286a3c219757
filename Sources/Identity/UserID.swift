import Wire

/// A user's id: their Ed25519 public key. Text form is lowercase base32 without padding (52
/// characters); people see `nick#` plus the first 6 characters (nicknames are not unique, the
/// suffix is).
public struct UserID: Bytes32Identifier {
    public let raw: Bytes32

    public init(_ raw: Bytes32) { self.raw = raw }

    /// Nil unless `publicKey` is 32 bytes.
    public init?(publicKey: some Collection<UInt8>) {
        self.init(bytes: publicKey)
    }

    /// The 32-byte Ed25519 public key.
    public var publicKey: [UInt8] { raw.bytes }

    /// The first 6 characters of the text form, enough to tell people apart.
    public var short: String { String(text.prefix(6)) }

    /// `nick#short`, the form shown to people.
    public func display(nick: String) -> String { "\(nick)#\(short)" }
}
