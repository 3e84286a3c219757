import Identity

/// Link outcomes reported by the shell. "The link" of a peer means its one authenticated link
/// (docs/DESIGN.md §4.2: one link per identity): the shell reports `onLinkEstablished` when the peer gets
/// a link and `onLinkLost` when it has none left, not once per TCP connection (a duplicate closed
/// by the tie-break is not a lost link).
extension Discovery {
    /// A handshake with `peer` completed and the link is up.
    ///
    /// - Parameter via: the endpoint dialed, for a link this node dialed (it becomes the
    ///   preferred address, and a keyless static entry at it learns its key); nil for a link
    ///   the peer dialed (its source port is not a listening port).
    public mutating func onLinkEstablished(peer: UserID, via endpoint: PeerEndpoint?, now: UInt64) -> [DiscoveryDirective] {
        guard phase == .running, peer != configuration.identity else { return [] }
        var directives: [DiscoveryDirective] = []
        let known = records[peer]
        let boundStatic = endpoint.map { keylessStatic.removeValue(forKey: $0) != nil } ?? false
        var record = known ?? PeerRecord(id: peer, origin: boundStatic ? .staticFile : .link, now: now)
        if known == nil, !boundStatic { _ = makeRoom(now: now, into: &directives) }  // a linked peer is kept even if full
        if let endpoint {
            if boundStatic, !record.staticEndpoints.contains(endpoint) { record.staticEndpoints.append(endpoint) }
            record.prefer(endpoint, limit: configuration.maxAddressesPerPeer)
            record.provenAddress = endpoint
        }
        record.link = LinkRecord(since: now, lastPing: now)
        record.everLinked = true
        record.lastSeen = now
        record.hasLeft = false
        record.dial.succeeded()
        if known == nil {
            record.state = record.liveState(now: now, configuration)
            directives.append(.peerDiscovered(record.info()))
        }
        records[peer] = record
        refuseIfOverlayFull(peer, dialedByPeer: endpoint == nil, into: &directives)
        advance(now: now, into: &directives)
        return directives
    }

    /// The link to `peer` closed (or failed its pings). If the peer is still heard, it is dialed
    /// again after the next backoff delay (by the smaller key; by the larger after
    /// `fallbackDialDelay`).
    public mutating func onLinkLost(peer: UserID, now: UInt64) -> [DiscoveryDirective] {
        guard phase == .running, var record = records[peer], record.link != nil else { return [] }
        record.link = nil
        record.unlinkedSince = now
        record.dial.failed(now: now, backoff: configuration.reconnectBackoff)
        records[peer] = record
        dropPick(peer)
        var directives: [DiscoveryDirective] = []
        advance(now: now, into: &directives)
        return directives
    }

    /// A ping (or any frame) arrived on the link to `peer`: it is alive.
    ///
    /// The shell SHOULD call this for every ping or pong, and MAY call it for other frames; a
    /// linked peer turns suspect after two `linkPingInterval`s without one and gone after three.
    public mutating func onLinkPing(peer: UserID, now: UInt64) -> [DiscoveryDirective] {
        guard phase == .running, var record = records[peer], record.link != nil else { return [] }
        record.link?.lastPing = now
        record.lastSeen = now
        record.hasLeft = false
        records[peer] = record
        var directives: [DiscoveryDirective] = []
        // Pings are frequent: scan the table only when the state may change.
        if record.state != .linked { advance(now: now, into: &directives) }
        return directives
    }

    /// A `.connect(peer:at:)` failed: no TCP connection, a failed handshake, or the identity
    /// proved was not `peer`. The next dial waits the next backoff delay, and tries the peer's
    /// next address first.
    public mutating func onDialFailed(peer: UserID?, at endpoint: PeerEndpoint, now: UInt64) -> [DiscoveryDirective] {
        guard phase == .running else { return [] }
        if let peer {
            guard var record = records[peer], record.link == nil else { return [] }
            record.dial.failed(now: now, backoff: configuration.reconnectBackoff)
            record.demote(endpoint)
            records[peer] = record
            dropPick(peer)
        } else {
            guard keylessStatic[endpoint] != nil else { return [] }
            keylessStatic[endpoint]!.failed(now: now, backoff: configuration.reconnectBackoff)
        }
        var directives: [DiscoveryDirective] = []
        advance(now: now, into: &directives)
        return directives
    }
}
