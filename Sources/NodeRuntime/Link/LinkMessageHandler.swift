import Gossip
import Identity
import LinkProtocol
import Replica
import Transport

/// The seam where the sync protocol plugs into links: `GossipHandler` is the node's default;
/// tests plug in others (a recorder, a hostile peer).
///
/// The node owns one handler. It calls the handler on the node's own executor — the methods take
/// the node as an `isolated` parameter — so a handler may keep mutable state (a Gossip instance)
/// without locks, read and write the node's store (`node.store`), and send frames
/// (`node.send(_:to:)`) synchronously. It MUST NOT block: a handler that needs time hands work to
/// a task and comes back through the node.
///
/// What the node guarantees:
/// - `linkOpened` for a peer before any `received` from that peer, and `linkClosed` after the
///   last; between them the peer has exactly one ready link (HELLO exchanged, tie-break done).
/// - `received` gets every frame whose type is not the link layer's (`LinkMessage.LinkType`),
///   in the order the peer sent them.
/// - Throwing `LinkViolation` from `received` closes the link with BYE "protocol violation" and
///   counts towards a ban of the peer; unknown types SHOULD be ignored, not thrown, so newer
///   peers can talk to older ones.
/// - `nodeStarted` once the store is open and before any link; `nodeStopping` when a stop
///   begins, while the store is still open and the links still up (it closes the store only
///   after every link has ended, so an apply under way always finishes).
///
/// The lifecycle, poke and report methods have empty defaults.
public protocol LinkMessageHandler: AnyObject {
    /// The sync fields this node puts in its link HELLO (nil: it speaks no sync protocol).
    var syncHello: SyncHello? { get }
    /// A link to `peer` is ready.
    func linkOpened(_ peer: LinkPeer, node: isolated Node)
    /// A sync message arrived from `peer`.
    func received(_ frame: SyncFrame, from peer: LinkPeer, node: isolated Node) throws(LinkViolation)
    /// The link to `peer` ended (the peer may link again later, under a new `LinkPeer`).
    func linkClosed(_ peer: LinkPeer, node: isolated Node)
    /// The node is running (the store is open); links come next.
    func nodeStarted(node: isolated Node)
    /// The node begins to stop: end timers and background work.
    func nodeStopping(node: isolated Node)
    /// Another process may have written the store (`poke` on the control socket). Returns how
    /// many new ops it found.
    func storeMayHaveChanged(node: isolated Node) -> Int
    /// The `sync` section of `parley status`.
    func syncStatus(node: isolated Node) -> SyncStatus
    /// The node's own process wrote the store (`Node.write`): push what is new now. The write's
    /// ops are `store.log.takeOpsSinceMark()`, or when that cannot say, those from
    /// `store.firstOpRowIDSinceMark` on (`Node.write` marks the store before it).
    func nodeWroteStore(node: isolated Node)
    /// The user is typing in `partition`: tell the peers who may see it.
    func sendTyping(in partition: PartitionID, node: isolated Node)
}

extension LinkMessageHandler {
    public var syncHello: SyncHello? { nil }
    public func nodeStarted(node: isolated Node) {}
    public func nodeStopping(node: isolated Node) {}
    public func storeMayHaveChanged(node: isolated Node) -> Int { 0 }
    public func syncStatus(node: isolated Node) -> SyncStatus { SyncStatus() }
    public func nodeWroteStore(node: isolated Node) {}
    public func sendTyping(in partition: PartitionID, node: isolated Node) {}
}

/// What a handler knows about the peer at the other end of a ready link.
public struct LinkPeer: Sendable, Equatable {
    public let id: UserID
    public let link: LinkID
    public let direction: LinkDirection
    public let address: SocketAddress
    public let hello: LinkHello
}

/// A handler's verdict that a peer broke the sync protocol.
public struct LinkViolation: Error, Sendable, Equatable, CustomStringConvertible {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

/// A handler that speaks no sync protocol: it counts sync frames and drops them (tests of the
/// link layer alone).
public final class IgnoringSyncHandler: LinkMessageHandler {
    /// Sync frames received and dropped.
    public private(set) var dropped: UInt64 = 0

    public init() {}

    public func linkOpened(_ peer: LinkPeer, node: isolated Node) {}

    public func received(_ frame: SyncFrame, from peer: LinkPeer, node: isolated Node) throws(LinkViolation) {
        dropped += 1
        node.log.debug(.ignored, "ignored sync message type 0x\(String(frame.type, radix: 16)) from \(node.displayName(of: peer.id))")
    }

    public func linkClosed(_ peer: LinkPeer, node: isolated Node) {}
}
