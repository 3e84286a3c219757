import Replica
import Wire

/// Why received bytes are not a sync message. The decoder never traps on hostile input; it
/// throws one of these, and the session closes the link for any but `reservedType`.
public enum SyncDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The frame holds no bytes at all.
    case empty
    /// The type byte is not one this build knows.
    case unknownType(UInt8)
    /// The type is reserved for a later feature (presence, typing, blobs): not an
    /// error of the peer, but nothing this decoder reads.
    case reservedType(SyncMessageType)
    /// The message is larger than one frame (`SyncMessage.maxBytes`).
    case tooLarge(length: Int, limit: Int)
    /// The bytes ended inside `field`.
    case truncated(field: String)
    /// Bytes were left after the last field.
    case trailingBytes(count: Int)
    /// A count or length is over its limit (checked before allocating anything for it).
    case overLimit(field: String, value: Int, limit: Int)
    /// A field holds a value the format does not allow.
    case invalidValue(field: String)
    /// A partition descriptor does not decode, or does not hash to the id next to it.
    case invalidDescriptor(String)
    /// An op envelope that does not parse (layout, version, body length).
    case invalidOperation(OperationError)
    /// A fork proof whose headers do not conflict or are not both validly signed.
    case invalidForkProof(OperationError)
    /// A compact message names by a number the sender never gave on the link (`LinkName`).
    case unknownLinkName(UInt32)

    public var description: String {
        switch self {
        case .empty: "empty sync message"
        case .unknownType(let type): "unknown sync message type \(type)"
        case .reservedType(let type): "sync message type \(type) is reserved"
        case .tooLarge(let length, let limit): "sync message of \(length) bytes is over the limit of \(limit)"
        case .truncated(let field): "sync message ends inside \(field)"
        case .trailingBytes(let count): "\(count) unexpected bytes after the sync message"
        case .overLimit(let field, let value, let limit): "\(field) is \(value), over the limit of \(limit)"
        case .invalidValue(let field): "invalid value in \(field)"
        case .invalidDescriptor(let why): "invalid partition descriptor: \(why)"
        case .invalidOperation(let error): "invalid op: \(error)"
        case .invalidForkProof(let error): "invalid fork proof: \(error)"
        case .unknownLinkName(let number): "name number \(number) was never sent in full on this link"
        }
    }

    init(_ error: WireDecodingError) {
        switch error {
        case .truncated(let field): self = .truncated(field: field)
        case .trailingBytes(let count): self = .trailingBytes(count: count)
        case .tooLong(let field, let length, let limit): self = .overLimit(field: field, value: length, limit: limit)
        case .invalidValue(let field): self = .invalidValue(field: field)
        case .invalidUTF8(let field): self = .invalidValue(field: field)
        }
    }
}
