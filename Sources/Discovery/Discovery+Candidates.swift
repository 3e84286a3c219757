import Identity

/// Peers learned other than by beacon: the static peers file, and address lists from linked
/// peers (docs/DESIGN.md §4.1: "linked peers may also exchange known addresses so one node on two
/// subnets bridges them").
extension Discovery {
    /// Adds the entries of a peers file (`PeersFile.parse`). They are dialed whatever the key
    /// order, retried with backoff forever, and never forgotten.
    ///
    /// May be called before `start` (dials begin at `start`). An entry with a key joins that
    /// peer's table entry; an entry without one is dialed as `.connect(peer: nil, at:)` until a
    /// beacon from that host and port, or a link dialed to it, tells its key. Our own key and
    /// repeated entries are skipped.
    public mutating func addStaticPeers(_ peers: [StaticPeer], now: UInt64) -> [DiscoveryDirective] {
        guard phase != .stopped else { return [] }
        var directives: [DiscoveryDirective] = []
        for entry in peers where entry.key != configuration.identity {
            let owner = entry.key ?? records.values.first { $0.addresses.contains(entry.endpoint) }?.id
            guard let owner else {
                if keylessStatic[entry.endpoint] == nil { keylessStatic[entry.endpoint] = DialSchedule() }
                continue
            }
            keylessStatic[entry.endpoint] = nil
            let known = records[owner]
            var record = known ?? PeerRecord(id: owner, origin: .staticFile, now: now)
            if !record.staticEndpoints.contains(entry.endpoint) { record.staticEndpoints.append(entry.endpoint) }
            record.addFallback(entry.endpoint, limit: configuration.maxAddressesPerPeer)
            if known == nil { directives.append(.peerDiscovered(record.info())) }
            records[owner] = record
        }
        advance(now: now, into: &directives)
        return directives
    }

    /// A linked peer `from` sent the addresses it knows (`PeerAddressList`). Each becomes a
    /// dialing candidate: unproven until a handshake with the named identity succeeds, the least
    /// preferred address of a known peer, and a new entry only while the table has room (a
    /// candidate never displaces a peer heard directly). Ignored unless `from` is linked; at
    /// most `PeerAddressList.maxEntries` entries are read.
    public mutating func onPeerAddresses(_ addresses: [PeerAddress], from sender: UserID, now: UInt64) -> [DiscoveryDirective] {
        guard phase == .running, records[sender]?.link != nil else { return [] }
        var directives: [DiscoveryDirective] = []
        for entry in addresses.prefix(PeerAddressList.maxEntries)
        where entry.peer != configuration.identity && entry.peer != sender && entry.endpoint.port != 0 {
            let known = records[entry.peer]
            if known == nil, dynamicPeerCount >= configuration.maxPeers {
                counters.tableFull += 1
                continue
            }
            var record = known ?? PeerRecord(id: entry.peer, origin: .exchanged, now: now)
            record.addFallback(entry.endpoint, limit: configuration.maxAddressesPerPeer)
            if record.lastSeen == nil { record.lastMentioned = now }
            if known == nil { directives.append(.peerDiscovered(record.info())) }
            records[entry.peer] = record
        }
        advance(now: now, into: &directives)
        return directives
    }

    /// What to tell linked peer `recipient` about others: peers that are linked or discovered
    /// (not suspect or gone), each with the latest address it was heard at (a beacon's source)
    /// or linked through (a dial of ours), sorted by id, at most `limit` (capped at
    /// `PeerAddressList.maxEntries`). Addresses only heard about are not passed on, so unproven
    /// hints do not spread.
    public func shareableAddresses(for recipient: UserID, limit: Int = PeerAddressList.maxEntries) -> [PeerAddress] {
        var shared: [PeerAddress] = []
        for id in records.keys.sorted() where id != recipient {
            guard shared.count < min(limit, PeerAddressList.maxEntries) else { break }
            let record = records[id]!
            guard record.state == .linked || record.state == .discovered, let endpoint = record.provenAddress else { continue }
            shared.append(PeerAddress(peer: id, endpoint: endpoint))
        }
        return shared
    }
}
