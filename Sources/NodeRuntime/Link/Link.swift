import Discovery
import Identity
import LinkProtocol
import SecureLink
import Synchronization
import Transport
import Wire

/// A link's number within one node process (links come and go; identities may have several
/// in a tie-break).
public struct LinkID: Hashable, Sendable, Comparable, CustomStringConvertible {
    let raw: UInt64
    public static func < (a: LinkID, b: LinkID) -> Bool { a.raw < b.raw }
    public var description: String { "link \(raw)" }
}

/// Why a link ended.
public enum LinkEnd: Sendable, Equatable, CustomStringConvertible {
    /// The peer said goodbye (BYE, then the FINAL frame).
    case goodbye(ByeReason?)
    /// The connection ended without a goodbye: the peer died, or the network dropped it.
    case lost(String)
    /// Nothing arrived for the idle timeout.
    case idle
    /// The peer broke the protocol: a frame that failed authentication or stalled, a malformed
    /// message, a missing or second HELLO. Counts towards a ban.
    case violation(String)
    /// This node closed it.
    case closedHere(ByeReason)

    public var description: String {
        switch self {
        case .goodbye(let reason): "the peer said goodbye" + (reason.map { " (\($0))" } ?? "")
        case .lost(let reason): "connection lost: \(reason)"
        case .idle: "silent for the idle timeout"
        case .violation(let reason): "protocol violation: \(reason)"
        case .closedHere(let reason): "closed here (\(reason))"
        }
    }
}

/// Timing of a link. Milliseconds.
public struct LinkConfiguration: Sendable, Equatable {
    /// docs/DESIGN.md §4.2: ping 15 s.
    public var pingInterval: UInt64 = 15_000
    /// docs/DESIGN.md §4.2: idle close 45 s.
    public var idleTimeout: UInt64 = 45_000
    /// How long the peer's HELLO may take after the handshake.
    public var helloTimeout: UInt64 = 5_000
    /// docs/DESIGN.md §4.2: a started frame must complete within 30 s.
    public var frameStallLimit: UInt64 = FrameStallDetector.defaultLimit
    /// Frame limits (1 MiB).
    public var frames = FrameConfiguration()
    /// How many frames and bytes a peer may send (a flood closes the link as a violation).
    public var rateLimit = RateLimitConfiguration()

    public init() {}
}

/// One authenticated, encrypted connection to a peer: the frame codec both ways over a
/// `TCPConnection`, a read loop that hands each message to the node, and the keepalive.
///
/// Lifecycle: the node makes it after a handshake, calls `start(hello:deliver:)`, which sends the
/// stream header and our HELLO and runs until the link ends, returning why. The first message
/// received MUST be HELLO (within `helloTimeout`) and there is only one; the link enforces this,
/// so the node sees `.hello` exactly once, first. `send` may be called from any task; frames are
/// encoded and queued under one lock, so they leave in the order of the calls. `close` ends the
/// link from this side, sending BYE and the goodbye frame first when given a reason.
public final class Link: Sendable {
    public let id: LinkID
    /// The proven identity of the peer.
    public let remote: UserID
    public let direction: LinkDirection
    /// Where the peer's end of the connection is.
    public let remoteAddress: SocketAddress
    /// The endpoint we dialed (outbound links only): the peer's listening address.
    public let dialedEndpoint: PeerEndpoint?

    private let connection: TCPConnection
    private let configuration: LinkConfiguration
    private let clock: NodeClock
    private let handshakeResult: HandshakeResult
    private let encoder: Mutex<FrameEncoder?>
    private let keepalive: Mutex<Keepalive>
    private let end = Mutex<LinkEnd?>(nil)
    /// The keepalive's timer on the connection's loop, and whether the link stopped arming it.
    private let pinger = Mutex<(timer: EventLoop.TimerID?, stopped: Bool)>((nil, false))
    /// Set when the node decides to close the link (the close itself runs as a task).
    private let closing = Atomic<Bool>(false)
    private let counters = Mutex(LinkTraffic())

    init(
        id: LinkID, result: HandshakeResult, connection: TCPConnection, direction: LinkDirection, dialed: PeerEndpoint?,
        configuration: LinkConfiguration, clock: NodeClock
    ) {
        self.id = id
        self.remote = result.remote
        self.direction = direction
        self.remoteAddress = connection.remoteAddress
        self.dialedEndpoint = dialed
        self.connection = connection
        self.configuration = configuration
        self.clock = clock
        self.handshakeResult = result
        let encoder = FrameEncoder(for: result, configuration: configuration.frames)
        // The stream header goes first, before any frame, whoever sends first (even a goodbye).
        try? connection.enqueue(encoder.header)
        counters.withLock { $0.bytesSent += UInt64(encoder.header.count) }
        self.encoder = Mutex(encoder)
        self.keepalive = Mutex(
            Keepalive(
                pingInterval: configuration.pingInterval, idleTimeout: configuration.idleTimeout,
                now: clock.now()))
    }

    /// Sends `message`. Throws when the link is closed or the peer reads too slowly (then the
    /// link is closed: a peer that cannot keep up loses it rather than growing our memory).
    public func send(_ message: LinkMessage) throws(TransportError) {
        do {
            try encoder.withLock { (encoder) throws(TransportError) in
                guard encoder != nil else { throw TransportError.closed }
                let frame: [UInt8]
                let plaintext = message.encoded
                do {
                    frame = try encoder!.encode(plaintext)
                } catch {
                    throw TransportError.closed  // only after our goodbye, or a frame over 1 MiB (a bug upstream)
                }
                try connection.enqueue(frame)
                counters.withLock {
                    $0.bytesSent += UInt64(frame.count)
                    $0.framesSent += 1
                    $0.bytesSentByType[plaintext.first ?? 0, default: 0] += UInt64(frame.count)
                }
            }
        } catch {
            if case .sendBufferFull = error { abort(.lost("the peer reads too slowly")) }
            throw error
        }
    }

    /// Bytes and frames each way so far.
    public var traffic: LinkTraffic { counters.withLock { $0 } }

    /// Ends the link from this side: BYE and the goodbye frame with `reason`, then the
    /// connection closes once they are sent (or after `flushTimeout`).
    public func close(reason: ByeReason, flushTimeout: Duration = .seconds(1)) async {
        guard setEnd(.closedHere(reason)) else { return }
        let goodbye: [UInt8]? = encoder.withLock { encoder in
            defer { encoder = nil }
            guard encoder != nil else { return nil }
            let bye = try? encoder!.encode(LinkMessage.bye(reason).encoded)
            let final = try? encoder!.encodeGoodbye(reason: reason.rawValue)
            return (bye ?? []) + (final ?? [])
        }
        if let goodbye {
            try? connection.enqueue(goodbye)
            try? await connection.flush(deadline: .now + flushTimeout)
        }
        connection.close()
    }

    /// Drops the connection at once, without a goodbye (the peer is broken or gone).
    func abort(_ reason: LinkEnd) {
        guard setEnd(reason) else { return }
        encoder.withLock { $0 = nil }
        connection.close()
    }

    /// Whether the link's end is decided (closing, closed, lost): what it read after that is
    /// not acted on.
    var hasEnded: Bool { closing.load(ordering: .relaxed) || end.withLock { $0 != nil } }

    /// Marks the link as ending at once, before `close(reason:)` (a task) gets to run.
    func markClosing() {
        closing.store(true, ordering: .relaxed)
    }

    /// Runs the link: sends `hello`, then reads until the link ends, passing the messages to
    /// `deliver` in order, those of one read together (one hop to the node, one transaction for
    /// their applies), awaited, so a slow node slows the peer down. Returns why the link ended.
    /// Call once.
    func run(hello: LinkHello, deliver: @escaping @Sendable ([LinkMessage]) async -> Void) async -> LinkEnd {
        do {
            try send(.hello(hello))
        } catch {
            abort(.lost(String(describing: error)))
        }
        armKeepalive()
        defer { stopKeepalive() }
        let readEnd = await readLoop(deliver: deliver)
        abort(readEnd)  // no-op when an end was already set
        return end.withLock { $0 } ?? readEnd
    }

    // MARK: Reading

    private func readLoop(deliver: @escaping @Sendable ([LinkMessage]) async -> Void) async -> LinkEnd {
        var batch: [LinkMessage] = []
        /// Delivers what was decoded before the link ends (as one message at a time did).
        func ending(_ end: LinkEnd) async -> LinkEnd {
            if !batch.isEmpty { await deliver(batch) }
            return end
        }
        var decoder = FrameDecoder(for: handshakeResult, configuration: configuration.frames)
        var stall = FrameStallDetector(limit: configuration.frameStallLimit)
        var rateLimit = RateLimit(configuration: configuration.rateLimit, now: clock.now())
        let helloDeadline = clock.now() + configuration.helloTimeout
        var sawHello = false
        while true {
            let deadline = [stall.deadline, sawHello ? nil : helloDeadline].compactMap { $0 }.min()
            let bytes: [UInt8]
            do {
                bytes = try await connection.read(deadline: deadline.map { clock.instant(at: $0) })
            } catch TransportError.timedOut {
                return sawHello
                    ? .violation("a frame stalled for \(configuration.frameStallLimit) ms")
                    : .violation("no HELLO within \(configuration.helloTimeout) ms")
            } catch {
                return .lost(String(describing: error))
            }
            guard !bytes.isEmpty else { return .lost("the peer closed the connection without a goodbye") }
            let now = clock.now()
            keepalive.withLock { $0.onReceived(now: now) }
            counters.withLock { $0.bytesReceived += UInt64(bytes.count) }
            decoder.feed(bytes)
            while true {
                let event: FrameEvent?
                do {
                    event = try decoder.next()
                } catch {
                    return await ending(.violation(error.description))
                }
                guard let event else { break }
                switch event {
                case .goodbye(let reason):
                    return await ending(.goodbye(reason.map { ByeReason(rawValue: $0) }))
                case .frame(let plaintext):
                    counters.withLock { $0.framesReceived += 1 }
                    if let flood = rateLimit.admit(plaintext, now: now) { return await ending(.violation("flood: \(flood)")) }
                    let message: LinkMessage
                    do {
                        message = try LinkMessage(decoding: plaintext)
                    } catch {
                        return await ending(.violation("malformed message: \(error)"))
                    }
                    if case .hello = message {
                        if sawHello { return await ending(.violation("a second HELLO")) }
                        sawHello = true
                    } else if !sawHello {
                        return await ending(.violation("a message before HELLO"))
                    }
                    if case .ping(let nonce) = message { try? send(.pong(nonce: nonce)) }
                    batch.append(message)
                }
            }
            if !batch.isEmpty {
                await deliver(batch)
                batch.removeAll(keepingCapacity: true)
            }
            if case .stalled = stall.check(decoder.pendingFrame, now: clock.now()) {
                return .violation("a frame stalled for \(configuration.frameStallLimit) ms")
            }
        }
    }

    // MARK: Keepalive

    /// Arms the keepalive's timer for its next deadline: the connection's event loop's timers,
    /// the node's one timer mechanism (`NodeTimer`; a link is not isolated to the node, so it
    /// schedules on the loop itself).
    private func armKeepalive() {
        let deadline = clock.instant(at: keepalive.withLock { $0.deadline })
        pinger.withLock { pinger in
            guard !pinger.stopped else { return }
            pinger.timer = connection.loop.schedule(at: deadline) { [weak self] in self?.keepaliveTick() }
        }
    }

    /// The link has ended: no more pings or idle checks.
    private func stopKeepalive() {
        pinger.withLock { pinger in
            pinger.stopped = true
            if let timer = pinger.timer { connection.loop.cancel(timer) }
            pinger.timer = nil
        }
    }

    private func keepaliveTick() {
        let now = clock.now()
        for action in keepalive.withLock({ $0.onTick(now: now) }) {
            switch action {
            case .ping(let nonce):
                try? send(.ping(nonce: nonce))
            case .closeIdle:
                guard setEnd(.idle) else { return }
                encoder.withLock { encoder in
                    if encoder != nil, let bye = try? encoder!.encode(LinkMessage.bye(.idle).encoded) {
                        try? connection.enqueue(bye)
                    }
                    encoder = nil
                }
                connection.close()
                return
            }
        }
        armKeepalive()
    }

    /// Records why the link ends; false if that was already decided.
    private func setEnd(_ reason: LinkEnd) -> Bool {
        end.withLock { end in
            guard end == nil else { return false }
            end = reason
            return true
        }
    }
}
