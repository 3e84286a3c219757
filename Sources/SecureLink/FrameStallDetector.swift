/// Notices a frame that started arriving but does not complete in time: the slow-sender defence
/// of docs/DESIGN.md §4.2, "a started frame must complete within 30 s".
///
/// Pure: the shell passes `FrameDecoder.pendingFrame` and the time (milliseconds) after every
/// `feed` and on every tick, and closes the link on `.stalled`. A frame counts from the first
/// check that sees it partly received, so checking right after each `feed` dates it precisely;
/// ticks alone may date it up to one tick late. An idle link (no partial frame) never stalls here:
/// idleness is the ping/idle timers' business.
public struct FrameStallDetector: Sendable {
    /// 30 s (docs/DESIGN.md §4.2).
    public static let defaultLimit: UInt64 = 30_000

    /// Milliseconds a started frame may take to complete.
    public let limit: UInt64
    private var watched: (index: UInt64, since: UInt64)?

    public init(limit: UInt64 = defaultLimit) {
        self.limit = limit
    }

    /// When the frame being watched becomes stalled, if one is: schedule a tick for then.
    public var deadline: UInt64? {
        watched.map { $0.since + limit }
    }

    /// The state of the incoming direction at `now`.
    public mutating func check(_ pending: FrameDecoder.PendingFrame?, now: UInt64) -> FrameStallStatus {
        guard let pending else {
            watched = nil
            return .idle
        }
        if watched?.index != pending.index {
            watched = (pending.index, now)  // a new frame started since the last check
        }
        let since = watched!.since
        return now >= since + limit ? .stalled(since: since) : .receiving(since: since)
    }
}

/// What `FrameStallDetector.check` found.
public enum FrameStallStatus: Sendable, Equatable {
    /// No frame is partly received.
    case idle
    /// A frame has been arriving since `since` and is still within the limit.
    case receiving(since: UInt64)
    /// A frame has been arriving since `since`, longer than the limit: close the link.
    case stalled(since: UInt64)
}
