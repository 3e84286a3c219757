import Identity
import Replica

/// Something a user interface shows live (docs/DESIGN.md §2: "`.emit(change)` → peer's UIs redraw").
///
/// Events say *what* changed, not the new state: a UI re-reads the views it shows from the store.
/// That keeps events small and lets a UI that fell behind (its buffer dropped events) catch up
/// by re-reading everything once.
public enum NodeEvent: Sendable, Equatable {
    /// The views of these partitions changed: ops applied (from peers, or written locally by this
    /// process or another one that wrote the store), which covers messages, edits, deletes,
    /// reactions, tasks and profiles. An empty set means "something local changed that names no
    /// partition" (a read marker written by a command, a bulk import): re-read what is shown.
    case changed(Set<PartitionID>)
    /// The set of partitions changed: a room joined or left, a conversation created or joined.
    case partitions
    /// `user` is typing in `partition` (ephemeral, never stored; show it for `typingShownFor`
    /// unless repeated).
    case typing(partition: PartitionID, user: UserID)
    /// Someone's presence may have changed: a link came or went.
    case presence
    /// The peer table changed (`parley peers`).
    case peers

    /// How long a UI shows "… is typing" after the last TYPING frame; senders repeat theirs
    /// every `NodeConfiguration.typingRepeatInterval` while the user types.
    public static let typingShownFor: Duration = .seconds(6)
}

/// The node's subscribers to `NodeEvent`s: every event goes to each of them.
///
/// Each subscription buffers the newest `bufferSize` events, so a slow UI never slows the node;
/// it loses the oldest ones and catches up by re-reading (see `NodeEvent`).
struct EventHub {
    static let bufferSize = 256

    private var subscribers: [UInt64: AsyncStream<NodeEvent>.Continuation] = [:]
    private var nextID: UInt64 = 1

    /// A new subscription and its id (for `remove`); `ended` is called with the id when the
    /// subscriber stops listening.
    mutating func subscribe(ended: @escaping @Sendable (UInt64) -> Void) -> (id: UInt64, stream: AsyncStream<NodeEvent>) {
        let (stream, continuation) = AsyncStream.makeStream(of: NodeEvent.self, bufferingPolicy: .bufferingNewest(Self.bufferSize))
        let id = nextID
        nextID += 1
        continuation.onTermination = { _ in ended(id) }
        subscribers[id] = continuation
        return (id, stream)
    }

    mutating func remove(_ id: UInt64) {
        subscribers.removeValue(forKey: id)?.finish()
    }

    func publish(_ event: NodeEvent) {
        for continuation in subscribers.values { continuation.yield(event) }
    }

    /// Ends every subscription (the node stopped).
    mutating func finishAll() {
        for continuation in subscribers.values { continuation.finish() }
        subscribers = [:]
    }

    var isEmpty: Bool { subscribers.isEmpty }
}
