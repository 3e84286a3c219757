import Gossip
import Identity
import LinkProtocol
import Replica
import Store
import Wire

/// The shell of the sync protocol: one `GossipSession` per linked peer, carried out on the
/// node's executor against the node's store and links (docs/DESIGN.md §2, §4.3).
///
/// It makes no protocol decisions. Each session's directives are queued and carried out in
/// order by one flat switch (`perform`); loads and applies are answered at once from the store
/// with their matching event; what an apply accepted is handed to every session
/// (`onNewLocalOp`, `onLocalForkProof`); chain claims are granted to one session at a time (the
/// others hear when it is released). What only a shell can notice it reports as events:
/// ops another process wrote (`PRAGMA data_version` every `pollInterval`, or a `poke`), a
/// partition newly held (summaries for every session), a timer that fired.
///
/// Ops are applied synchronously on the node's executor, one transaction per `.apply`, so an
/// apply is never cut in half by a stop. A store error closes the link with `.localError`
/// (the peer is not blamed); the next link starts afresh.
public final class GossipHandler: LinkMessageHandler {
    /// Above this many new ops found at once in the store (an import while the node runs), they
    /// are not pushed one by one as NEW_OP: the changed summaries go out and peers fetch them
    /// with WANTs, 256 ops a message.
    public static let livePushLimit = 1_000

    public let configuration: GossipConfiguration
    /// Milliseconds between checks of `PRAGMA data_version`.
    public let pollInterval: UInt64

    /// One session per linked peer that speaks the sync protocol. A class: every frame and
    /// every applied op looks sessions up, and copying this struct out of the dictionary (the
    /// session's tables retained and released each time) showed in a profile of ten nodes.
    final class PeerSession {
        let link: LinkID
        var session: GossipSession
        var timer = NodeTimer()
        var progress = (fetched: 0, wanted: 0)
        /// When progress was last logged, while a long fetch is under way.
        var progressLoggedAt: UInt64?

        init(link: LinkID, session: GossipSession) {
            self.link = link
            self.session = session
        }
    }

    /// A directive waiting to be carried out, for the session of `link`.
    struct Work {
        let peer: UserID
        let link: LinkID
        let directive: GossipDirective
    }

    var sessions: [UserID: PeerSession] = [:] {
        didSet { if sessions.count != sessionOrder.count { sessionOrder = sessions.keys.sorted() } }
    }
    /// The peers with a session, sorted: the order every event handed to all sessions takes
    /// (kept when a session is added or removed, not sorted again for every applied op).
    private(set) var sessionOrder: [UserID] = []
    /// The link that pushes each chain to this node (push control): the others are asked to SKIP
    /// it when they push a duplicate. At most `maxPushers` chains.
    var pushers: [ChainKey: UserID] = [:]
    /// Chains whose pusher is remembered (one entry each; beyond it, chains get no pusher and
    /// their duplicate pushes are tolerated).
    static let maxPushers = 65_536
    /// Which session fetches each chain, and the sessions refused it meanwhile.
    var claims: [ChainKey: UserID] = [:]
    var refused: [ChainKey: Set<UserID>] = [:]
    private var queue: [Work] = []
    private var draining = false
    /// Counts of links that have ended, for `status`.
    var closedTotals = (fetched: 0, opsReceived: 0, opsSent: 0)

    // Noticing other processes' writes (GossipHandler+LocalWrites.swift).
    var watcher = NodeTimer()
    var lastDataVersion: Int64 = 0
    var lastRowID: Int64 = 0
    /// Ops `checkLocalWrites` found and handed to the sessions, in all (tests).
    var localOpsFound = 0
    var knownPartitions: Set<PartitionID> = []
    /// This node's inbox partition (its id is a hash: looked up on every apply).
    var inboxID: PartitionID?

    // Blobs (GossipHandler+Blobs.swift).
    var blobs = BlobFetcher()
    var blobScanDue = true
    var lastBlobScan: UInt64 = 0
    /// The blob being served, read once for all its chunks.
    var servedBlob: (hash: Bytes32, data: [UInt8])?
    /// The room directory (`GossipHandler+RoomDirectory.swift`): each linked peer's last ROOMS
    /// and when it came, what was last sent to each, and when the own list is next read.
    var peerRoomLists: [UserID: (rooms: [RoomListing], at: UInt64)] = [:]
    var sentRoomLists: [UserID: (rooms: [RoomListing], at: UInt64)] = [:]
    var roomDirectoryPeers: Set<UserID> = []
    var nextRoomListCheck: UInt64 = 0

    /// A handler whose sessions use `configuration`, checking for other processes' writes every
    /// `pollInterval` milliseconds.
    public init(configuration: GossipConfiguration = GossipConfiguration(), pollInterval: UInt64 = 250) {
        self.configuration = configuration
        self.pollInterval = max(1, pollInterval)
    }

    public var syncHello: SyncHello? { configuration.hello }

    // MARK: - Links

    public func linkOpened(_ peer: LinkPeer, node: isolated Node) {
        guard let hello = peer.hello.sync else {
            node.log.info(.noSync, "\(node.displayName(of: peer.id)) speaks no sync protocol; nothing is synced with it")
            return
        }
        guard let summaries = storeCall(node, peer.id, "reading the partitions", { try self.summaries(for: [peer.id], node: node)[peer.id] ?? [] })
        else { return }
        sessions[peer.id]?.timer.cancel(on: node)
        sessions[peer.id] = PeerSession(link: peer.link, session: GossipSession(configuration: configuration))
        feed(peer.id, node: node) { session, now in session.start(local: summaries, peer: hello, now: now) }
        noteSeen(peer.id, node: node)
        roomDirectoryLinkOpened(peer.id, hello: hello, node: node)
        blobScanDue = true
    }

    public func received(_ frame: SyncFrame, from peer: LinkPeer, node: isolated Node) throws(LinkViolation) {
        guard sessions[peer.id]?.link == peer.link else { return }
        if frame.type == TypingMessage.type { return try receivedTyping(frame.payload, from: peer.id, node: node) }
        if frame.type == RoomListMessage.type { return try receivedRoomList(frame.payload, from: peer.id, node: node) }
        if frame.type == SyncMessageType.blobWant.rawValue || frame.type == SyncMessageType.blob.rawValue {
            return try receivedBlobMessage(frame, from: peer.id, node: node)
        }
        let bytes = [frame.type] + frame.payload
        feed(peer.id, node: node) { session, now in session.onFrame(bytes, now: now) }
    }

    public func linkClosed(_ peer: LinkPeer, node: isolated Node) {
        guard let entry = sessions[peer.id], entry.link == peer.link else { return }
        entry.timer.cancel(on: node)
        closedTotals.fetched += entry.progress.fetched
        closedTotals.opsReceived += entry.session.statistics.opsReceived
        closedTotals.opsSent += entry.session.statistics.opsSent
        sessions[peer.id] = nil
        noteSeen(peer.id, node: node)
        roomDirectoryLinkClosed(peer.id)
        feedBlobs(node: node) { fetcher, now in fetcher.onPeerGone(peer.id, now: now) }
        for key in refused.keys { refused[key]?.remove(peer.id) }
        for (key, holder) in claims where holder == peer.id { release(key, by: peer.id, node: node) }
        let lost = pushers.filter { $0.value == peer.id }.map(\.key).sorted()
        guard !lost.isEmpty else { return }
        for key in lost { pushers[key] = nil }
        feedAll(node: node) { _, session, now in session.onPushersLost(lost, now: now) }
    }

    /// `.pushReceived`: picks the chain's pusher and asks a redundant one to SKIP. The author of
    /// a chain, when linked, is its pusher (it is where the chain's ops come from first, and a
    /// chain whose author is skipped everywhere could be left to relays skipping each other);
    /// otherwise the first link that delivers it. The pusher itself is never asked to skip.
    func notePush(_ key: ChainKey, from peer: UserID, duplicate: Bool, node: isolated Node) {
        if peer == key.author {
            if pushers[key] != nil || pushers.count < Self.maxPushers { pushers[key] = peer }
            return
        }
        guard let pusher = pushers[key] else {
            if pushers.count < Self.maxPushers { pushers[key] = peer }
            return
        }
        guard duplicate, pusher != peer else { return }
        feed(peer, node: node) { session, now in session.onRedundantPush(key.partition, author: key.author, now: now) }
    }

    /// Ends `peer`'s claim on a chain; the sessions refused it meanwhile may try again.
    func release(_ key: ChainKey, by peer: UserID, node: isolated Node) {
        guard claims[key] == peer else { return }
        claims[key] = nil
        for waiting in (refused.removeValue(forKey: key) ?? []).sorted() {
            feed(waiting, node: node) { session, now in session.onChainReleased(key.partition, author: key.author, now: now) }
        }
    }

    /// Remembers that `peer` was seen now (`people` shows it after the link ends, or the node stops).
    func noteSeen(_ peer: UserID, node: isolated Node) {
        let store = node.store!
        _ = storeCall(node, nil, "recording when a peer was seen") { try store.directory.noteLastSeen(peer, atMillis: node.wallMillis) }
    }

    // MARK: - Feeding sessions

    /// Hands one event to `peer`'s session and carries out what it asks for (and what that leads
    /// to), in order. Called while directives are being carried out, it only queues them: the
    /// loop already running takes them next.
    func feed(
        _ peer: UserID, node: isolated Node, now: UInt64? = nil, _ event: (inout GossipSession, UInt64) -> [GossipDirective]
    ) {
        guard let entry = sessions[peer] else { return }
        let link = entry.link
        let directives = event(&entry.session, now ?? node.monotonicMillis)
        queue.append(contentsOf: directives.map { Work(peer: peer, link: link, directive: $0) })
        guard !draining else { return }
        draining = true
        defer { draining = false }
        var next = 0
        while next < queue.count {
            let work = queue[next]
            next += 1
            // A session replaced or gone meanwhile takes no more directives.
            guard sessions[work.peer]?.link == work.link else { continue }
            perform(work.directive, for: work.peer, node: node)
        }
        queue.removeAll(keepingCapacity: queue.count < 4_096)
    }

    /// Hands one event to every session.
    func feedAll(node: isolated Node, _ event: (UserID, inout GossipSession, UInt64) -> [GossipDirective]) {
        // One clock reading for all: every applied op reaches every session.
        let now = node.monotonicMillis
        for peer in sessionOrder {
            feed(peer, node: node, now: now) { session, now in event(peer, &session, now) }
        }
    }

    /// Runs a store call for `peer`'s session; on failure logs it, closes the link with
    /// `.localError` and returns nil (the session waits for an answer that never comes, and
    /// ends with the link).
    func storeCall<T>(_ node: isolated Node, _ peer: UserID?, _ what: @autoclosure () -> String, _ body: () throws -> T) -> T? {
        do {
            return try body()
        } catch {
            node.log.error(.syncFailed, "sync: \(what()) failed: \(error)" + (peer.map { "; closing the link to \(node.displayName(of: $0))" } ?? ""))
            if let peer { node.closeLink(to: peer, reason: .localError) }
            return nil
        }
    }
}
