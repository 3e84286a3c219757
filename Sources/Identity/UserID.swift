import Wire

/// A user's id: their Ed25519 public key. Text form is lowercase base32 without padding (52
/// characters); people see `nick#` plus the first 6 characters (nicknames are not unique, the
/// suffix is).
public struct UserID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let raw: Bytes32

    public init(_ raw: Bytes32) { self.raw = raw }

    /// Nil unless `publicKey` is 32 bytes.
    public init?(publicKey: some Collection<UInt8>) {
        guard let raw = Bytes32(publicKey) else { return nil }
        self.raw = raw
    }

    /// Parses the full base32 text form (case-insensitive); nil if it is not one.
    public init?(text: String) {
        guard text.utf8.count == 52, let bytes = Base32.decode(text), let raw = Bytes32(bytes) else { return nil }
        self.raw = raw
    }

    /// The 32-byte Ed25519 public key.
    public var publicKey: [UInt8] { raw.bytes }

    /// Full base32 text (52 characters).
    public var text: String { Base32.encode(raw.bytes) }

    /// The first 6 characters of the text form, enough to tell people apart.
    public var short: String { String(text.prefix(6)) }

    /// `nick#short`, the form shown to people.
    public func display(nick: String) -> String { "\(nick)#\(short)" }

    public var description: String { text }

    public static func < (a: UserID, b: UserID) -> Bool { a.raw < b.raw }
}
