import Replica
import Wire

/// TYPING (0x0C): "my user is typing in this partition" — ephemeral, never stored or forwarded.
///
/// Body: `partition [32]`, nothing else. The sender is the link's peer (the link authenticated
/// it), so the message names no user. A node sends it only to peers who may read the partition
/// (anyone linked for a room, current members for a conversation) and at most once per
/// partition every few seconds; a receiver shows it only for partitions it holds and, in a
/// conversation, only from a current member.
public enum TypingMessage {
    public static let type = SyncMessageType.typing.rawValue
    public static let bodyLength = 32

    /// The frame body for `partition`.
    public static func body(_ partition: PartitionID) -> [UInt8] {
        partition.bytes
    }

    /// The partition a TYPING body names; throws unless it is exactly 32 bytes.
    public static func partition(fromBody body: [UInt8]) throws(WireDecodingError) -> PartitionID {
        guard body.count == bodyLength else {
            throw body.count < bodyLength ? .truncated(field: "typing partition") : .trailingBytes(count: body.count - bodyLength)
        }
        return PartitionID(bytes: body)!
    }
}
