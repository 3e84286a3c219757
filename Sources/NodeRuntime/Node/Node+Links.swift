import Discovery
import Identity
import LinkProtocol
import SecureLink
import Transport

/// A link the node runs, and what it learnt from it.
struct LinkEntry: Sendable {
    let link: Link
    /// The peer's HELLO; nil until it arrives (the link is not ready before).
    var hello: LinkHello?
    var readyAt: UInt64?
}

/// What the node remembers about a peer beyond Discovery's table: for names and `parley doctor`.
struct PeerNotes: Sendable {
    var nick: String?
    /// How far the peer's wall clock was ahead of this node's (negative: behind) when its last
    /// link came up, in milliseconds, and when that was (monotonic): from its HELLO, off by the
    /// HELLO's travel time, which is far below what `parley doctor` reports.
    var clockOffset: (millis: Int64, at: UInt64)?
    /// The last failed attempt to link: when, where, and why.
    var lastFailure: (at: UInt64, endpoint: PeerEndpoint?, reason: String)?
}

/// The node as the links' shell: dialing, accepting, the one-link-per-identity rule, and the
/// messages links deliver.
extension Node {
    // MARK: - Dialing

    /// Dials `peer` at `endpoint` (Discovery's `.connect`), unless it is already linked, being
    /// dialed, or banned.
    func dial(_ peer: UserID, at endpoint: PeerEndpoint) {
        guard isRunning, current[peer] == nil, !dialing.contains(peer) else { return }
        let now = clock.now()
        if refusesLink(to: peer) { return perform(discovery.onDialFailed(peer: peer, at: endpoint, now: now)) }
        if let until = admission.banExpiry(peer: peer, now: now) {
            noteFailure(peer, at: endpoint, "banned until \(clock.wallMillis(at: until)) after repeated protocol violations")
            perform(discovery.onDialFailed(peer: peer, at: endpoint, now: now))
            return
        }
        dialing.insert(peer)
        let timeout = Duration.milliseconds(Int64(configuration.handshakeTimeout))
        let (identity, networkKey) = (identity, networkKey)
        linkTask { [self] in
            let outcome: Result<(HandshakeResult, TCPConnection), LinkSetupError>
            do {
                let connection = try await TCPConnection.connect(host: endpoint.host, port: endpoint.port, timeout: timeout, loop: loop)
                do throws(LinkSetupError) {
                    let result = try await LinkSetup.handshake(
                        asClientOf: peer, on: connection, identity: identity,
                        networkKey: networkKey, deadline: .now + timeout)
                    outcome = .success((result, connection))
                } catch {
                    connection.close()
                    outcome = .failure(error)
                }
            } catch {
                outcome = .failure(.connect(String(describing: error)))
            }
            await dialFinished(peer, at: endpoint, outcome)
        }
    }

    private func dialFinished(_ peer: UserID, at endpoint: PeerEndpoint, _ outcome: Result<(HandshakeResult, TCPConnection), LinkSetupError>) {
        dialing.remove(peer)
        switch outcome {
        case .failure(let error):
            noteFailure(peer, at: endpoint, error.description)
            log.debug(.dialFailed, "dial to \(displayName(of: peer)) at \(endpoint) failed: \(error)")
            if isRunning { perform(discovery.onDialFailed(peer: peer, at: endpoint, now: clock.now())) }
        case .success(let (result, connection)):
            guard isRunning else { return connection.close() }
            if let refusal = refusesAnotherLink(to: result.remote, host: connection.remoteAddress.unmappedHost) {
                connection.close()
                noteFailure(peer, at: endpoint, "this node has as many links as it takes (\(refusal))")
                return perform(discovery.onDialFailed(peer: peer, at: endpoint, now: clock.now()))
            }
            startLink(result, connection: connection, direction: .outbound, dialed: endpoint)
        }
    }

    /// Learns the key of a static peer listed without one (`KeyProbe`), then lets Discovery
    /// dial it as a keyed static peer.
    func probe(_ endpoint: PeerEndpoint) {
        guard isRunning, !probing.contains(endpoint) else { return }
        probing.insert(endpoint)
        let timeout = Duration.milliseconds(Int64(configuration.handshakeTimeout))
        let networkKey = networkKey
        linkTask { [self] in
            let outcome: Result<UserID, LinkSetupError>
            do throws(LinkSetupError) {
                outcome = .success(
                    try await LinkSetup.probeKey(
                        host: endpoint.host, port: endpoint.port, networkKey: networkKey,
                        timeout: timeout, loop: loop))
            } catch {
                outcome = .failure(error)
            }
            await probeFinished(endpoint, outcome)
        }
    }

    private func probeFinished(_ endpoint: PeerEndpoint, _ outcome: Result<UserID, LinkSetupError>) {
        probing.remove(endpoint)
        guard isRunning else { return }
        let now = clock.now()
        switch outcome {
        case .success(let key) where key != identity.id:
            keylessNotes[endpoint] = nil
            log.info(.keyProbe, "\(endpoint) answered the key probe as \(displayName(of: key))")
            perform(discovery.addStaticPeers([StaticPeer(endpoint: endpoint, key: key)], now: now))
        case .success:
            keylessNotes[endpoint] = "this is our own address"
            perform(discovery.onDialFailed(peer: nil, at: endpoint, now: now))
        case .failure(let error):
            keylessNotes[endpoint] = error.description
            log.debug(.keyProbe, "key probe of \(endpoint) failed: \(error)")
            perform(discovery.onDialFailed(peer: nil, at: endpoint, now: now))
        }
    }

    // MARK: - Accepting

    /// A TCP connection arrived: admit it (caps and bans), then run its handshake or probe.
    func accepted(_ connection: TCPConnection) {
        let host = connection.remoteAddress.unmappedHost
        guard isRunning else { return connection.close() }
        if let refusal = admission.admit(host: host, now: clock.now()) {
            log.debug(.refused, "refused a connection from \(connection.remoteAddress): \(refusal)")
            return connection.close()
        }
        let timeout = Duration.milliseconds(Int64(configuration.handshakeTimeout))
        let (identity, networkKey) = (identity, networkKey)
        linkTask { [self] in
            let outcome: Result<LinkSetup.Accepted, LinkSetupError>
            do throws(LinkSetupError) {
                outcome = .success(
                    try await LinkSetup.accept(
                        on: connection, identity: identity, networkKey: networkKey,
                        deadline: .now + timeout))
            } catch {
                outcome = .failure(error)
            }
            await acceptFinished(connection, host: host, outcome)
        }
    }

    private func acceptFinished(_ connection: TCPConnection, host: String, _ outcome: Result<LinkSetup.Accepted, LinkSetupError>) {
        admission.release(host: host)
        switch outcome {
        case .success(.probeAnswered):
            connection.close()
        case .failure(let error):
            connection.close()
            log.debug(.handshakeFailed, "inbound connection from \(connection.remoteAddress) failed: \(error)")
            if error.isViolation { recordViolation(host: host, peer: nil, error.description) }
        case .success(.established(let result)):
            let now = clock.now()
            guard isRunning, result.remote != identity.id, admission.banExpiry(peer: result.remote, now: now) == nil else {
                return connection.close()
            }
            if let refusal = refusesAnotherLink(to: result.remote, host: host) {
                log.debug(.refused, "refused a link from \(connection.remoteAddress): \(refusal)")
                return connection.close()
            }
            startLink(result, connection: connection, direction: .inbound, dialed: nil)
        }
    }

    /// Why one more link with `peer` at `host` would be one too many (`Admission.admitLink`);
    /// nil when it may be made. A peer that has a link already may always replace it (a restart).
    private func refusesAnotherLink(to peer: UserID, host: String) -> Admission.Refusal? {
        guard current[peer] == nil else { return nil }
        let withHost = links.values.count { $0.link.remoteAddress.unmappedHost == host }
        return admission.admitLink(host: host, withHost: withHost, total: links.count)
    }

    // MARK: - Running links

    /// Wraps an authenticated connection in a `Link` and runs it until it ends.
    private func startLink(_ result: HandshakeResult, connection: TCPConnection, direction: LinkDirection, dialed: PeerEndpoint?) {
        let id = LinkID(raw: nextLinkID)
        nextLinkID += 1
        let link = Link(
            id: id, result: result, connection: connection, direction: direction, dialed: dialed,
            configuration: configuration.link, clock: clock)
        links[id] = LinkEntry(link: link)
        let hello = LinkHello(instance: instance, listenPort: listener?.port ?? 0, nick: nick, sync: handler.syncHello, wallMillis: wallMillis)
        // On the event loop's thread, as the node is: a read, its handling and the answers it
        // writes happen between two polls, with no hand-off to another thread.
        linkTasks[id] = Task(executorPreference: loop) { [self, inbox] in
            let end = await link.run(hello: hello) { messages in
                inbox.post(messages, from: id)
                // The other links the same `epoll_wait` found readable read and post first (their
                // jobs are queued on the loop ahead of this one's), so one drain takes them all.
                await Task.yield()
                await self.drainInbox()
            }
            await linkEnded(id, end)
        }
    }

    /// Handles what the links posted to the inbox, from every link, in the order posted, in
    /// transactions of up to `maxMessagesPerCommit` messages (savepoints inside them; a lone
    /// sync frame gets one too, so a push held already costs no extra reads): the reads
    /// that queued while the node was busy cost one commit — one WAL append of the pages they
    /// touched — rather than one each. If a commit fails, the links whose messages it held close
    /// as after any store error (their sessions counted ops the store then lost).
    func drainInbox() {
        while true {
            let batches = inbox.take(upTo: Self.maxMessagesPerCommit)
            guard !batches.isEmpty else { return }
            let messages = batches.reduce(0) { $0 + $1.messages.count }
            guard messages > 1 || batches.first?.messages.first?.isSync == true, isRunning, let store else {
                for batch in batches { handle(batch) }
                continue
            }
            do {
                try store.inOneTransaction {
                    for batch in batches { handle(batch) }
                }
            } catch {
                for id in Set(batches.map(\.link)) {
                    guard let link = links[id]?.link else { continue }
                    log.error(.storeFailed, "storing what \(displayName(of: link.remote)) sent failed: \(error)")
                    close(link, .localError)
                }
            }
        }
    }

    /// Messages per commit at most: a flood from many links still commits every few
    /// milliseconds, and other work on the node (a user's post) waits no longer than that.
    static let maxMessagesPerCommit = 256

    private func handle(_ batch: LinkInbox.Batch) {
        for message in batch.messages { linkReceived(batch.link, message) }
    }

    /// One message from link `id`, in order; none once the link's end is decided.
    func linkReceived(_ id: LinkID, _ message: LinkMessage) {
        guard let entry = links[id], !entry.link.hasEnded else { return }
        let peer = entry.link.remote
        switch message {
        case .hello(let hello):
            linkReady(id, hello)
        case .ping, .pong:
            if current[peer] == id, isRunning { perform(discovery.onLinkPing(peer: peer, now: clock.now())) }
        case .bye(let reason):
            log.debug(.goodbye, "\(displayName(of: peer)) says goodbye: \(reason)")
        case .addresses(let addresses):
            if current[peer] == id, isRunning { perform(discovery.onPeerAddresses(addresses, from: peer, now: clock.now())) }
        case .sync(let frame):
            guard current[peer] == id, let linkPeer = linkPeer(id), !discardsInbound(frame) else { return }
            do {
                try handler.received(frame, from: linkPeer, node: self)
            } catch {
                closeForViolation(entry.link, error.reason)
            }
        }
    }

    /// The peer's HELLO arrived: the link is ready, unless the one-link-per-identity rule keeps
    /// another link of the same peer.
    private func linkReady(_ id: LinkID, _ hello: LinkHello) {
        guard isRunning, var entry = links[id] else { return }
        let link = entry.link, peer = link.remote
        if refusesLink(to: peer) { return close(link, .shutdown) }
        guard hello.version == LinkHello.currentVersion else {
            noteFailure(peer, at: link.dialedEndpoint, "it speaks link protocol version \(hello.version), this node \(LinkHello.currentVersion)")
            return close(link, .unsupportedVersion)
        }
        entry.hello = hello
        entry.readyAt = clock.now()
        links[id] = entry
        if let nick = hello.nick { notes[peer, default: PeerNotes()].nick = nick }
        if let theirs = hello.wallMillis {
            notes[peer, default: PeerNotes()].clockOffset = (Int64(clamping: theirs) - Int64(clamping: wallMillis), clock.now())
        }

        if let existingID = current[peer], let existing = links[existingID] {
            let keepNew = LinkTieBreak.keepsNewLink(
                existing: (existing.link.direction, existing.hello?.instance), new: (link.direction, hello.instance),
                local: identity.id, remote: peer)
            guard keepNew else { return close(link, .duplicate) }
            current[peer] = nil
            if let old = linkPeer(existingID) { handler.linkClosed(old, node: self) }
            close(existing.link, existing.hello?.instance == hello.instance ? .duplicate : .replaced)
        }
        current[peer] = id
        perform(discovery.onLinkEstablished(peer: peer, via: link.dialedEndpoint, now: clock.now()))
        log.info(.linked, "linked \(displayName(of: peer)) at \(link.remoteAddress) (\(link.direction.rawValue))")
        if let linkPeer = linkPeer(id) { handler.linkOpened(linkPeer, node: self) }
        shareAddresses(with: peer)
        emit(.presence)
        emit(.peers)
    }

    /// Link `id` ended: forget it, tell Discovery and the handler if it was the peer's link.
    private func linkEnded(_ id: LinkID, _ end: LinkEnd) {
        linkTasks[id] = nil
        guard let entry = links.removeValue(forKey: id) else { return }
        let link = entry.link, peer = link.remote
        if case .violation(let reason) = end {
            recordViolation(host: link.remoteAddress.unmappedHost, peer: peer, reason)
        }
        if current[peer] == id {
            current[peer] = nil
            if let linkPeer = linkPeer(entry) { handler.linkClosed(linkPeer, node: self) }
            log.info(.unlinked, "unlinked \(displayName(of: peer)) at \(link.remoteAddress): \(end)")
            if isRunning { perform(discovery.onLinkLost(peer: peer, now: clock.now())) }
            emit(.presence)
            emit(.peers)
        } else if entry.hello == nil, let endpoint = link.dialedEndpoint {
            noteFailure(peer, at: endpoint, "the link ended before HELLO: \(end)")
            if isRunning { perform(discovery.onDialFailed(peer: peer, at: endpoint, now: clock.now())) }
        }
    }

    // MARK: - Closing and violations

    /// Closes `link` from this side with `reason` (its run task reports the end).
    func close(_ link: Link, _ reason: ByeReason) {
        link.markClosing()
        Task { await link.close(reason: reason) }
    }

    private func closeForViolation(_ link: Link, _ reason: String) {
        log.warn(.violation, "\(displayName(of: link.remote)) at \(link.remoteAddress) broke the protocol: \(reason); closing the link")
        recordViolation(host: link.remoteAddress.unmappedHost, peer: link.remote, reason)
        close(link, .protocolViolation)
    }

    private func recordViolation(host: String?, peer: UserID?, _ reason: String) {
        for ban in admission.recordViolation(host: host, peer: peer, now: clock.now()) {
            switch ban {
            case .host(let host, let until):
                log.warn(.banned, "banned \(host) for \((until - clock.now()) / 1000) s after repeated violations (last: \(reason))")
            case .peer(let peer, let until):
                log.warn(.banned, "banned \(displayName(of: peer)) for \((until - clock.now()) / 1000) s after repeated violations (last: \(reason))")
                if let id = current[peer], let link = links[id]?.link { close(link, .banned) }
            }
        }
    }

    private func noteFailure(_ peer: UserID, at endpoint: PeerEndpoint?, _ reason: String) {
        notes[peer, default: PeerNotes()].lastFailure = (clock.now(), endpoint, reason)
    }

    // MARK: - Helpers

    /// Runs a dial, probe or handshake as its own task. Not kept: each ends by itself within the
    /// handshake timeout, and reports back to a node that may have stopped meanwhile (then it
    /// only closes its connection).
    private func linkTask(_ body: @escaping @Sendable () async -> Void) {
        Task(executorPreference: loop) { await body() }
    }

    private func linkPeer(_ id: LinkID) -> LinkPeer? {
        links[id].flatMap(linkPeer)
    }

    private func linkPeer(_ entry: LinkEntry) -> LinkPeer? {
        guard let hello = entry.hello else { return nil }
        return LinkPeer(
            id: entry.link.remote, link: entry.link.id, direction: entry.link.direction,
            address: entry.link.remoteAddress, hello: hello)
    }

    // MARK: - For handlers

    /// Closes `peer`'s link with `reason`; with a `violation` (what the peer did), as a protocol
    /// violation that counts towards a ban.
    public func closeLink(to peer: UserID, reason: ByeReason, violation: String? = nil) {
        guard let id = current[peer], let link = links[id]?.link else { return }
        if let violation {
            closeForViolation(link, violation)
        } else {
            close(link, reason)
        }
    }

    /// The traffic of `peer`'s ready link, and when it became ready (Unix milliseconds).
    public func linkTraffic(of peer: UserID) -> (traffic: LinkTraffic, since: UInt64)? {
        guard let id = current[peer], let entry = links[id] else { return nil }
        return (entry.link.traffic, clock.wallMillis(at: entry.readyAt ?? 0))
    }

    /// Unix milliseconds now (for ops' timestamps and the HLC).
    public nonisolated var wallMillis: UInt64 { skewedWallMillis(clock.wallMillisNow()) }

    /// Milliseconds on the node's monotonic clock (for the pure protocol instances).
    public var monotonicMillis: UInt64 { clock.now() }

    /// Sends a sync frame to `peer`'s link; false when it has none or the link refuses it (closed,
    /// the peer reads too slowly, over 1 MiB, or a type the link layer owns).
    @discardableResult
    public func send(_ frame: SyncFrame, to peer: UserID) -> Bool {
        guard !LinkMessage.LinkType.all.contains(frame.type), let id = current[peer], let link = links[id]?.link else { return false }
        if let taken = injectOutboundFault(frame, to: peer) { return taken }
        do {
            try link.send(.sync(frame))
            return true
        } catch {
            return false
        }
    }
}
