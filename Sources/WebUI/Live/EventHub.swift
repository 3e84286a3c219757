import Foundation
import Presentation
import Replica
import Synchronization

/// Something the page shows live, as it goes out on `/api/events`.
public enum WebEvent: Sendable, Equatable {
    /// The views of these partitions changed (empty: any of them may have): messages, edits,
    /// reactions, tasks, read markers, unread counts.
    case changed(Set<PartitionID>)
    /// Rooms or conversations came or went.
    case partitions
    /// `user` is typing in `partition`.
    case typing(partition: PartitionID, user: String, nick: String?)
    /// Someone's presence may have changed.
    case presence
    /// The peer table changed.
    case peers

    /// The SSE event name and its JSON data.
    var wire: (name: String, data: JSON) {
        switch self {
        case .changed(let partitions): ("changed", .object(["partitions": .array(partitions.map(\.text).sorted().map { .string($0) })]))
        case .partitions: ("partitions", .object([:]))
        case .typing(let partition, let user, let nick):
            ("typing", .object(["partition": .string(partition.text), "user": .string(user), "nick": .optional(nick)]))
        case .presence: ("presence", .object([:]))
        case .peers: ("peers", .object([:]))
        }
    }
}

/// The open event streams, and what goes out on all of them.
final class EventHub: Sendable {
    /// The most streams open at once; a new one beyond it closes the oldest.
    static let maxStreams = 32
    private let streams = Mutex<[EventStream]>([])

    /// A new stream, greeted with a `hello` event (so a client knows it is live).
    func subscribe() -> EventStream {
        let stream = EventStream()
        stream.send(event: "hello", data: JSON.object([:]).text)
        let evicted = streams.withLock { streams -> EventStream? in
            streams.removeAll { $0.isClosed }
            streams.append(stream)
            return streams.count > Self.maxStreams ? streams.removeFirst() : nil
        }
        evicted?.close()
        return stream
    }

    func publish(_ event: WebEvent) {
        let (name, data) = event.wire
        // One line: JSON strings hold no raw line breaks, so dropping each break and the
        // indentation after it changes nothing but layout.
        let text = data.text.replacing(/\n */, with: "")
        for stream in streams.withLock({ $0 }) where !stream.send(event: name, data: text) {
            streams.withLock { $0.removeAll { $0 === stream } }
        }
    }

    func heartbeat() {
        for stream in streams.withLock({ $0 }) { stream.heartbeat() }
    }

    func closeAll() {
        let open = streams.withLock { streams in
            defer { streams = [] }
            return streams
        }
        for stream in open { stream.close() }
    }
}
