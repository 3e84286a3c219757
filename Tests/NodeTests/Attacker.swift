import Discovery
import Foundation
import Gossip
import Identity
import LinkProtocol
import Replica
import SecureLink
import Sodium
import Transport
import Wire

@testable import NodeRuntime

/// A hostile peer run by the test process against a real `parley run` (issue 10's abuse tests):
/// it speaks the real protocol with the code the node uses — `LinkSetup`'s secret handshake under
/// its own identity, `FrameEncoder`/`FrameDecoder` over the session keys, `LinkMessage` and
/// `SyncMessage` — and then misbehaves on purpose.
///
/// Every connection starts from `source`, a loopback address of its own (127.0.0.7, …), so the
/// victim (run with `--ban-loopback`) can ban that address while the honest nodes keep 127.0.0.1.
/// Not thread-safe: one task drives one attacker.
// @unchecked: the codec state, `pending` and `answersPings` are touched only by the one task that drives it.
final class Attacker: @unchecked Sendable {
    /// What a read from the victim brought.
    enum Event: Sendable, Equatable {
        case message(LinkMessage)
        /// The victim's goodbye frame (after its BYE).
        case goodbye
        /// The connection ended (or failed) without a goodbye.
        case closed
        /// Nothing arrived before the deadline.
        case timedOut
    }

    let connection: TCPConnection
    let identity: Identity
    private var encoder: FrameEncoder
    private var decoder: FrameDecoder
    private var pending: [Event] = []
    /// Whether `next` answers the victim's PINGs (off: a peer gone silent, for the idle close).
    var answersPings = true

    private init(connection: TCPConnection, result: HandshakeResult, identity: Identity) {
        self.connection = connection
        self.identity = identity
        encoder = FrameEncoder(for: result)
        decoder = FrameDecoder(for: result)
        try? connection.enqueue(encoder.header)
    }

    /// A TCP connection to `host:port` from the loopback address `source`.
    static func connect(to host: String, port: UInt16, from source: String, timeout: Duration = .seconds(5)) async throws -> TCPConnection {
        try await TCPConnection.connect(
            to: try SocketAddress(ipAddress: host, port: port), from: try SocketAddress(ipAddress: source, port: 0), timeout: timeout,
            loop: loop)
    }

    /// The attackers' own loop: the victim's handshake deadline (2 s) runs while the attacker
    /// answers, and on the process's shared loop the answer would wait behind every other test's
    /// control clients and harness sockets. An attack whose steps race the victim's deadlines
    /// runs its task on it too (`Task(executorPreference: Attacker.loop)`).
    static let loop = EventLoop()

    /// Connects from `source` and completes the secret handshake with `server` as `identity`
    /// under `networkKey` (nothing else is sent yet).
    static func handshake(
        with server: UserID, at host: String, port: UInt16, from source: String, as identity: Identity,
        networkKey: NetworkKey = NetworkKey(deploymentSecret: nil)
    ) async throws -> Attacker {
        // On the attackers' loop too, not the test process's shared pool: other suites' work
        // there could hold the handshake's steps past the victim's deadline, which the victim
        // counts as a violation (a flaky ban count in the op-flood test).
        try await Task(executorPreference: loop) {
            let connection = try await connect(to: host, port: port, from: source)
            do {
                let result = try await LinkSetup.handshake(
                    asClientOf: server, on: connection, identity: identity, networkKey: networkKey, deadline: .now + .seconds(10))
                return Attacker(connection: connection, result: result, identity: identity)
            } catch {
                connection.close()
                throw error
            }
        }.value
    }

    /// Message 1 of a real handshake to `server`: what a slow handshake dribbles out.
    static func clientHello(to server: UserID, networkKey: NetworkKey = NetworkKey(deploymentSecret: nil)) -> [UInt8] {
        var handshake = Handshake(role: .client(serverKey: server), identity: Identity(), networkKey: networkKey, startedAt: 0)
        guard case .send(let hello) = handshake.start().first else { preconditionFailure("a client starts by sending its hello") }
        return hello
    }

    // MARK: Sending

    /// One frame's bytes on the wire for `message` (not sent).
    func frame(_ message: LinkMessage) throws -> [UInt8] {
        try encoder.encode(message.encoded)
    }

    /// One frame's bytes on the wire for a sync `message` (not sent).
    func frame(_ message: SyncMessage) throws -> [UInt8] {
        try frame(Self.link(message.encode()))
    }

    /// Sends `message` and waits until the kernel took it.
    func send(_ message: LinkMessage) async throws {
        try await connection.write(try frame(message), deadline: .now + .seconds(10))
    }

    func send(_ message: SyncMessage) async throws {
        try await send(Self.link(message.encode()))
    }

    func send(_ message: BlobMessage) async throws {
        try await send(Self.link(message.encode()))
    }

    /// Raw bytes: frames already encoded, or a part of one.
    func sendRaw(_ bytes: [UInt8]) async throws {
        try await connection.write(bytes, deadline: .now + .seconds(10))
    }

    /// The link HELLO of a sync-speaking peer (no listener of its own).
    func sendHello(nick: String = "attacker") async throws {
        try await send(.hello(LinkHello(instance: .random(), listenPort: 0, nick: nick, sync: Self.attackerHello)))
    }

    /// HELLO, then a SUMMARY listing `partitions` (with their descriptors), then waits until
    /// the victim's SUMMARY offers each of them back: from then on the victim takes their ops.
    /// Returns every message received meanwhile; throws if the offers do not come in `timeout`.
    func linkAndOffer(_ partitions: [PartitionDescriptor], timeout: Duration = .seconds(10)) async throws -> [LinkMessage] {
        try await sendHello()
        try await send(
            .summary(
                more: false, entries: partitions.map { SummaryEntry($0, digest: PartitionDigest(heads: []), revealDescriptor: true) }))
        var waiting = Set(partitions.map(\.id))
        var seen: [LinkMessage] = []
        let deadline = ContinuousClock.now + timeout
        while !waiting.isEmpty {
            switch await next(deadline: deadline) {
            case .message(let message):
                seen.append(message)
                if case .summary(_, let entries)? = Self.syncMessage(message) {
                    for entry in entries { waiting.remove(entry.partition) }
                }
            case .goodbye, .closed: throw AttackerError.closed(seen)
            case .timedOut: throw AttackerError.timedOut(seen)
            }
        }
        return seen
    }

    // MARK: Receiving

    /// The next frame or end from the victim, waiting at most until `deadline`. Answers PINGs
    /// itself (a peer that does not is closed as idle, which is not what a test looks at).
    func next(deadline: ContinuousClock.Instant) async -> Event {
        while true {
            if !pending.isEmpty { return pending.removeFirst() }
            let bytes: [UInt8]
            do {
                bytes = try await connection.read(deadline: deadline)
            } catch TransportError.timedOut {
                return .timedOut
            } catch {
                return .closed
            }
            guard !bytes.isEmpty else { return .closed }
            decoder.feed(bytes)
            while true {
                let event: FrameEvent?
                do {
                    event = try decoder.next()
                } catch {
                    pending.append(.closed)
                    break
                }
                guard let event else { break }
                switch event {
                case .goodbye:
                    pending.append(.goodbye)
                case .frame(let plaintext):
                    guard let message = try? LinkMessage(decoding: plaintext) else { continue }
                    if answersPings, case .ping(let nonce) = message { try? connection.enqueue(try frame(.pong(nonce: nonce))) }
                    pending.append(.message(message))
                }
            }
        }
    }

    /// Reads until the victim ends the link or `deadline`; returns every message and whether
    /// (and when) it ended.
    func drain(until deadline: ContinuousClock.Instant) async -> (messages: [LinkMessage], endedAt: ContinuousClock.Instant?) {
        var messages: [LinkMessage] = []
        while true {
            switch await next(deadline: deadline) {
            case .message(let message): messages.append(message)
            case .goodbye, .closed: return (messages, .now)
            case .timedOut: return (messages, nil)
            }
        }
    }

    func close() {
        connection.close()
    }

    // MARK: Helpers

    static func link(_ syncBytes: [UInt8]) -> LinkMessage {
        .sync(SyncFrame(type: syncBytes[0], payload: Array(syncBytes[1...])))
    }

    /// The sync message inside `message`, if it is one the gossip session reads.
    static func syncMessage(_ message: LinkMessage) -> SyncMessage? {
        guard case .sync(let frame) = message else { return nil }
        return try? SyncMessage.decode([frame.type] + frame.payload)
    }

    /// The blob message inside `message`, if it is one.
    static func blobMessage(_ message: LinkMessage) -> BlobMessage? {
        guard case .sync(let frame) = message else { return nil }
        return try? BlobMessage.decode([frame.type] + frame.payload)
    }

    /// The attacker's sync HELLO: what a node announces, without names by number, so that every
    /// partition a message names shows in it (`partitions(in:)`).
    static var attackerHello: SyncHello {
        var configuration = GossipConfiguration()
        configuration.compactNames = false
        return configuration.hello
    }

    /// A short description of `message` for a failure: its type, the partitions it names and,
    /// for ops, how many.
    static func describe(_ message: LinkMessage) -> String {
        let names = partitions(in: message).map { String($0.text.prefix(8)) }.sorted()
        if let blob = blobMessage(message) { return "\(blob.type) \(names)" }
        guard let sync = syncMessage(message) else { return "\(message)" }
        if case .ops(let batch) = sync { return "OPS \(names) with \(batch.ops.count) ops" }
        return "\(sync.type) \(names)"
    }

    /// Every partition `message` names (sync and blob messages; none for link messages).
    static func partitions(in message: LinkMessage) -> Set<PartitionID> {
        if let blob = blobMessage(message) {
            switch blob {
            case .want(let partition, _, _, _): return [partition]
            case .chunk(let chunk): return [chunk.partition]
            }
        }
        switch syncMessage(message) {
        case .summary(_, let entries)?: return Set(entries.map(\.partition))
        case .vector(let partition, _, _)?, .want(let partition, _, _, _)?: return [partition]
        case .ops(let batch)?: return Set([batch.partition] + batch.ops.map(\.partition))
        case .newOp(let op)?: return [op.partition]
        case .fork(let proof)?: return [proof.partition]
        case .skip(let chains)?, .resume(let chains)?: return Set(chains.map(\.partition))
        case .prune(let partitions)?, .graft(let partitions)?: return Set(partitions)
        case .announce(let partition, _)?: return [partition]
        // Not sent to the attacker, which does not announce names by number (`attackerHello`).
        case .compactVector?, .compactAnnounce?, .compactSkip?, .compactResume?: preconditionFailure("a compact message to a peer that did not ask for it")
        case nil: return []
        }
    }
}

/// Why an attacker could not get as far as a test needed.
enum AttackerError: Error, CustomStringConvertible {
    case closed([LinkMessage])
    case timedOut([LinkMessage])

    var description: String {
        switch self {
        case .closed(let seen): "the victim closed the link (after \(seen.count) messages, the last \(seen.last.map { "\($0)" } ?? "none"))"
        case .timedOut(let seen): "the victim did not offer the partitions in time (\(seen.count) messages)"
        }
    }
}
