import Discovery
import Foundation
import Identity
import LinkProtocol
import Replica
import SQLite
import SecureLink
import Store
import Synchronization
import Transport

/// A running Parley node: the actor shell that owns the sockets, the timers, the store and the
/// links, and carries out the directives of the pure protocol instances (docs/DESIGN.md §2).
///
/// It makes no protocol decisions: Discovery decides whom to dial and what each peer's state
/// is, `Handshake` and the frame codec decide what bytes mean, `Admission` decides who may
/// connect, `Keepalive` when to ping, `RateLimit` when a peer floods, and each link's
/// `GossipSession` what to sync (carried out by the `GossipHandler`). The node interprets their
/// outputs in flat switches and keeps the bookkeeping that only a shell can (which TCP
/// connection is which peer's link).
///
/// Use: `start()` (binds everything, or throws a `NodeError` naming the fix), then
/// `waitUntilStopped()`; `stop()` from a signal handler leaves gracefully (leaving beacons,
/// BYE on every link, the store closed). One node per data directory and process.
public actor Node {
    /// The phases of a node's life.
    enum Phase: Sendable { case created, running, stopping, stopped }

    public nonisolated let configuration: NodeConfiguration
    public nonisolated let identity: Identity
    /// The person this node writes for: its identity, or the person whose device it is (known
    /// once the store is open; docs/DESIGN.md §3.8).
    public nonisolated var me: UserID { person.withLock { $0 } }
    private nonisolated let person: Mutex<UserID>
    public nonisolated let log: NodeLog
    /// Random per process start: in beacons and HELLO, so peers notice a restart.
    public nonisolated let instance = InstanceID.random()
    nonisolated let clock = NodeClock()
    nonisolated let networkKey: NetworkKey
    /// What the links read and the node has not handled yet (group commit across links).
    nonisolated let inbox = LinkInbox()

    /// The node's own event loop: its sockets, and the node itself, run on the loop's thread
    /// (`EventLoop+Executor.swift` says why; `EventLoop` why each node has its own).
    public nonisolated let loop = EventLoop()
    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    var phase = Phase.created
    /// The node's store; only the node (and its `LinkMessageHandler`) touch it.
    public private(set) var store: ReplicaStore!
    var nick: String?
    var lock: DataDirectoryLock?
    var listener: TCPListener?
    var udp: UDPSocket?
    var beaconSender: BeaconSender?
    var control: ControlServer?
    var broadcastTargets: [String] = []

    var discovery: Discovery!
    var discoveryTimer = NodeTimer()
    var admission: Admission
    var handler: any LinkMessageHandler

    // Links (see Node+Links.swift).
    var nextLinkID: UInt64 = 1
    var links: [LinkID: LinkEntry] = [:]
    var current: [UserID: LinkID] = [:]
    var dialing: Set<UserID> = []
    var probing: Set<PeerEndpoint> = []
    var notes: [UserID: PeerNotes] = [:]
    /// Authors whose ops wait here for stamps too far ahead: how far ahead the latest was, and
    /// when it came (monotonic); at most `maxStampsAhead`, the oldest forgotten.
    var stampsAhead: [UserID: (millis: Int64, at: UInt64)] = [:]
    static let maxStampsAhead = 64
    var keylessNotes: [PeerEndpoint: String] = [:]
    var duplicateIdentitySource: PeerEndpoint?
    /// Faults injected on request (`Faults/FaultInjection.swift`; the lab's splits and loss).
    var faults = FaultState()
    var faultCounters = FaultCounters()
    /// Pushes held back by an injected delay, each with its timer, by number.
    var delayedPushes: [UInt64: NodeTimer] = [:]
    var nextDelayedPush: UInt64 = 0

    // User interfaces (see Events/Node+Interfaces.swift).
    var eventHub = EventHub()
    var typingSentAt: [PartitionID: UInt64] = [:]

    var tasks: [Task<Void, Never>] = []
    var addressTimer = NodeTimer()
    var summaryTimer = NodeTimer()
    var linkTasks: [LinkID: Task<Void, Never>] = [:]
    var stopWaiters: [CheckedContinuation<Void, Never>] = []

    /// A node for `identity` with `configuration`; nothing is opened until `start`.
    /// `handler` speaks the sync protocol on the links (default: a `GossipHandler`).
    public init(
        configuration: NodeConfiguration, identity: Identity, log: NodeLog = NodeLog(),
        handler: sending (any LinkMessageHandler)? = nil
    ) {
        self.configuration = configuration
        self.identity = identity
        person = Mutex(identity.id)
        self.log = log
        self.networkKey = NetworkKey(deploymentSecret: configuration.networkSecret)
        self.admission = Admission(configuration: configuration.admission)
        self.handler =
            handler
            ?? GossipHandler(
                configuration: configuration.linkGossip,
                pollInterval: configuration.localWritePollInterval)
    }

    // MARK: - Start

    /// Opens the store, binds the link listener, the discovery socket and the control socket,
    /// and starts discovery. Returns the bound link address.
    @discardableResult
    public func start() async throws(NodeError) -> SocketAddress {
        guard phase == .created else { preconditionFailure("invalid state \(phase): start called twice") }
        let lock = try DataDirectoryLock(directory: configuration.dataDirectory)
        do {
            try openStore()
            let listener = try bind("links") { () throws(TransportError) in
                try TCPListener(host: configuration.listenHost, port: configuration.listenPort, loop: loop)
            }
            self.listener = listener
            if let port = configuration.discoveryPort {
                let udp = try bind("discovery") { () throws(TransportError) in try UDPSocket(host: "0.0.0.0", port: port, loop: loop) }
                self.udp = udp
                broadcastTargets =
                    configuration.broadcastTargets
                    ?? NodeConfiguration.defaultBroadcastTargets((try? NetworkInterfaces.list()) ?? [])
            }
            // We hold the directory's lock, so a socket file left there is stale (a node killed
            // with -9): remove it.
            unlink(configuration.controlSocketPath)
            let controlListener = try bind("control") { () throws(TransportError) in
                try UnixListener(path: configuration.controlSocketPath, loop: loop)
            }
            control = ControlServer(listener: controlListener, node: self)
        } catch {
            closeSockets()
            store?.database.close()
            lock.release()
            throw error
        }
        self.lock = lock
        phase = .running
        handler.nodeStarted(node: self)
        startDiscovery()
        startLoops()
        log.info(
            "node \(displayName(of: identity.id)) listening on \(listener!.localAddress)"
                + (udp.map { ", discovery on UDP \($0.localAddress.port) to \(broadcastTargets.joined(separator: ","))" } ?? ", discovery off"))
        return listener!.localAddress
    }

    private func openStore() throws(NodeError) {
        // The store is encrypted under a key sealed by the identity (docs/DESIGN.md §5.1); a new
        // key for a store already encrypted would open nothing.
        if !FileManager.default.fileExists(atPath: configuration.storeKeyPath), Database.fileFormat(at: configuration.databasePath) == .encrypted {
            throw .store(
                "the store \(configuration.databasePath) is encrypted, and its key file \(configuration.storeKeyPath) is missing; "
                    + "put store.key back, or move parley.db away to start a fresh store")
        }
        do {
            let key = try StoreKeyFile.loadOrCreate(at: configuration.storeKeyPath, identity: identity)
            let store = try ReplicaStore(path: configuration.databasePath, key: key)
            let clock = self.clock
            let skew = configuration.faults.clockSkewMillis
            // `received_at`: the wall clock to the microsecond, skewed as the node's wall clock is.
            store.log.receivedAtMicros = {
                let micros = clock.wallMicrosNow()
                return FaultConfiguration.skewed(micros / 1_000, by: skew) * 1_000 + micros % 1_000
            }
            // The identity opens the conversation keys granted to it; the inbox may hold
            // invites that arrived (by import) while no node ran.
            try store.useIdentity(identity)
            let me = try store.devices.person(of: identity.id)
            person.withLock { $0 = me }
            try store.processInbox(me: identity)
            for room in configuration.joinRooms {
                _ = try store.log.ensurePartition(.room(room), joined: true)
            }
            nick = try store.directory.profile(me)?.nick
            self.store = store
        } catch {
            throw .store("cannot open the store \(configuration.databasePath): \(error)")
        }
    }

    private func bind<T>(_ what: String, _ make: () throws(TransportError) -> T) throws(NodeError) -> T {
        do {
            return try make()
        } catch {
            throw .bind(what: what, error)
        }
    }

    private func startLoops() {
        guard let listener else { return }
        tasks.append(
            Task { [listener] in
                do {
                    for try await connection in listener.connections { self.accepted(connection) }
                } catch {
                    if !(error is CancellationError) { self.log.error("link listener failed: \(error)") }
                }
            })
        if let udp {
            tasks.append(
                Task { [udp] in
                    do {
                        for try await datagram in udp.datagrams { self.received(datagram) }
                    } catch {
                        self.log.error("discovery socket failed: \(error)")
                    }
                })
        }
        if let control { tasks.append(Task(executorPreference: loop) { await control.run() }) }
        shareAddressesPeriodically()
        writeLogSummariesEverySecond()
    }

    /// A limited log's summary line comes when its window closes, even if nothing more is logged.
    private func writeLogSummariesEverySecond() {
        summaryTimer.arm(after: 1_000, on: self) {
            self.log.writeSummaries()
            self.writeLogSummariesEverySecond()
        }
    }

    // MARK: - Stop

    /// Leaves gracefully: leaving beacons, BYE on every link, sockets and store closed. Safe to
    /// call more than once and from any task; returns when the node has stopped.
    ///
    /// Applying ops is synchronous on the node's executor, so an apply under way finishes before
    /// this starts or between its steps; the store closes only after every link's task ended,
    /// when nothing can write any more.
    public func stop() async {
        switch phase {
        case .created:
            phase = .stopped
            return
        case .stopping, .stopped:
            await waitUntilStopped()
            return
        case .running:
            break
        }
        phase = .stopping
        log.info("stopping: saying goodbye to \(current.count) linked peer(s)")
        handler.nodeStopping(node: self)
        perform(discovery.stop(now: clock.now()))
        discoveryTimer.cancel(on: self)
        listener?.close()
        control?.close()
        await beaconSender?.finish()
        let open = Array(links.values.map(\.link))
        await withTaskGroup(of: Void.self) { group in
            for link in open { group.addTask { await link.close(reason: .shutdown) } }
        }
        for task in linkTasks.values { await task.value }
        closeSockets()
        for task in tasks { task.cancel() }
        addressTimer.cancel(on: self)
        summaryTimer.cancel(on: self)
        for key in delayedPushes.keys { delayedPushes[key]?.cancel(on: self) }
        delayedPushes = [:]
        store?.database.close()
        lock?.release()
        phase = .stopped
        eventHub.finishAll()
        log.writeSummaries(all: true)
        log.info("stopped")
        for waiter in stopWaiters { waiter.resume() }
        stopWaiters = []
    }

    // MARK: - Wipe

    /// Destroys the key files and the store keys this process holds (`DataWipe.destroyKeys`):
    /// from here on the store cannot be read, by this node or anyone.
    public func wipeKeys() {
        let destroyed = DataWipe.destroyKeys(in: configuration.dataDirectory)
        log.info("wipe: destroyed \(destroyed.joined(separator: ", "))")
    }

    /// Panic wipe (docs/DESIGN.md §5.1): destroys the keys, removes the data directory's files
    /// and stops the node; returns the names of the files removed.
    @discardableResult
    public func wipe() async -> [String] {
        var removed = DataWipe.destroyKeys(in: configuration.dataDirectory)
        removed += DataWipe.removeFiles(in: configuration.dataDirectory)
        await stop()
        // What stopping left: the lock file, a socket the control server unlinks late.
        removed += DataWipe.removeFiles(in: configuration.dataDirectory)
        return removed
    }

    /// Returns once the node has stopped.
    public func waitUntilStopped() async {
        guard phase != .stopped else { return }
        await withCheckedContinuation { stopWaiters.append($0) }
    }

    private func closeSockets() {
        listener?.close()
        udp?.close()
        control?.close()
    }

    /// Whether the node runs (not yet stopping).
    public var isRunning: Bool { phase == .running }

    // MARK: - For handlers and reports

    /// `nick#short` for a peer (its HELLO nick, else its directory profile), or `#short`.
    public func displayName(of peer: UserID) -> String {
        let nick = peer == identity.id ? nick : (notes[peer]?.nick ?? (try? store?.directory.profile(peer)?.nick) ?? nil)
        guard let nick, !nick.isEmpty else { return "#" + peer.short }
        return peer.display(nick: TerminalText.line(nick))
    }

    /// The peers with a ready link.
    public var linkedPeers: [UserID] { current.keys.sorted() }
}
