import Identity

extension Discovery {
    /// A UDP datagram arrived on the discovery port from `source` (the `recvfrom` address).
    ///
    /// Checked in order, cheapest first (docs/DESIGN.md §4.1.1): the source's rate limit, then
    /// `Beacon(decoding:)` (magic, version, length, MAC), then own identity, then replay. What
    /// fails is counted in `diagnostics`; only an accepted beacon changes the peer table. The
    /// peer's dial endpoint is `source.host` with the beacon's TCP port.
    public mutating func onBeacon(_ bytes: [UInt8], from source: PeerEndpoint, now: UInt64) -> [DiscoveryDirective] {
        let key = configuration.beaconKey
        return onBeacon(from: source, now: now) { () throws(BeaconError) in try Beacon(decoding: bytes, key: key) }
    }

    /// `onBeacon(_:from:now:)` with the datagram's decoding (its MAC checked under this node's
    /// beacon key) handed in, run only past the rate limit. The simulator delivers one broadcast
    /// to hundreds of nodes of one network key: it checks the MAC once, as `Beacon(decoding:key:)`
    /// answers the same for the same bytes and key on every node.
    public mutating func onBeacon(
        from source: PeerEndpoint, now: UInt64, decode: () throws(BeaconError) -> Beacon
    ) -> [DiscoveryDirective] {
        guard phase == .running else { return [] }
        let limited = !(configuration.exemptLoopbackFromRateLimit && source.isLoopback)
        guard sources.admit(source.host, now: now, limited: limited) else {
            counters.rateLimited += 1
            return []
        }
        let beacon: Beacon
        do {
            beacon = try decode()
        } catch {
            counters.reject(error, from: source)
            sources.countRejected(source.host)
            return []
        }
        let endpoint = source.with(port: beacon.tcpPort)
        if beacon.identity == configuration.identity { return onOwnIdentity(beacon, at: endpoint) }

        var directives: [DiscoveryDirective] = []
        let known = records[beacon.identity]
        var record = known ?? PeerRecord(id: beacon.identity, origin: .beacon, now: now)
        // A keyless static entry at this host and port learns its key (a replay teaches nothing).
        let bindsStatic = keylessStatic[endpoint] != nil
        if known == nil, !bindsStatic, !makeRoom(now: now, into: &directives) { return directives }

        let restarted = !record.instances.isEmpty && !record.instances.contains { $0.id == beacon.instanceID }
        switch record.observe(instance: beacon.instanceID, seq: beacon.seq, leaving: beacon.isLeaving) {
        case .replay:
            counters.replayed += 1
            return directives
        case .staleLeaving:
            // The leaving beacon of an instance that has since been replaced: the peer lives on.
            counters.accepted += 1
            records[record.id] = record
            return directives
        case .fresh:
            counters.accepted += 1
        }
        if bindsStatic {
            keylessStatic[endpoint] = nil
            if !record.staticEndpoints.contains(endpoint) { record.staticEndpoints.append(endpoint) }
        }
        let firstBeacon = record.beaconInterval == nil
        let returning = known != nil && record.state == .gone
        record.lastSeen = now
        record.beaconInterval = min(
            max(UInt64(beacon.interval), configuration.acceptedInterval.lowerBound),
            configuration.acceptedInterval.upperBound)
        record.prefer(endpoint, limit: configuration.maxAddressesPerPeer)
        record.provenAddress = endpoint
        record.hasLeft = beacon.isLeaving
        if !beacon.isLeaving, firstBeacon || restarted || returning {
            // A peer appeared (for the first time, after a restart, or back from gone): tell it
            // about us quickly, and dial it now rather than after an old backoff.
            speedUp(now: now, willDialUs: beacon.identity < configuration.identity)
            record.dial.retrySoon(floor: configuration.reconnectBackoff.lowerBound)
            if record.link == nil { record.unlinkedSince = now }
        }
        if known == nil {
            record.state = record.liveState(now: now, configuration)
            directives.append(.peerDiscovered(record.info()))
        }
        let routine = known != nil && !firstBeacon && !restarted && !returning && !beacon.isLeaving && record.liveState(now: now, configuration) == record.state
        records[record.id] = record
        // A known peer's routine beacon changes nothing `advance` decides (no new peer, no state
        // change): what falls due meanwhile waits for the tick already asked for. So a node among
        // hundreds does not walk its whole table for every beacon it hears.
        if routine { return directives }
        // A newcomer the overlay will not dial (its active set is full): nothing else changed, so
        // only the beacon that greets it and the newcomer's own deadlines need a tick. At start a
        // node hears hundreds of newcomers; a walk of the whole table for each one would cost
        // the square of the peers.
        if known == nil, !bindsStatic, !beacon.isLeaving, overlayWillNotDial(record) {
            let change = record.nextStateChange(after: now, configuration).map(onStateCheckGrid) ?? .max
            let due = min(nextBeaconAt, change)
            if due > now {
                if due < requestedTick ?? .max {
                    requestedTick = due
                    directives.append(.scheduleTick(after: due - now))
                }
                return directives
            }
        }
        advance(now: now, into: &directives)
        return directives
    }

    /// A beacon with our own identity: our own echo, or another process using our key.
    private mutating func onOwnIdentity(_ beacon: Beacon, at endpoint: PeerEndpoint) -> [DiscoveryDirective] {
        if beacon.instanceID == configuration.instanceID {
            counters.ownBeaconsHeard += 1
            return []
        }
        counters.duplicateIdentity += 1
        guard !duplicateInstances.contains(beacon.instanceID) else { return [] }
        duplicateInstances.append(beacon.instanceID)
        if duplicateInstances.count > configuration.maxDuplicateInstances { duplicateInstances.removeFirst() }
        return [.duplicateIdentity(endpoint)]
    }

    /// Makes room for one more non-static peer: if the table is full, forgets the unlinked one
    /// that matters least among those no longer heard as they promised (gone, then suspect, then
    /// the least recently seen of those that missed a beacon). False, and counted, when every
    /// entry is linked or beacons on time.
    ///
    /// A peer that beacons on time is never displaced by a newcomer: on a network of more nodes
    /// than `maxPeers`, replacing the least recently seen would forget a live peer for every
    /// beacon of one not in the table, and re-learn it at its next beacon — a table that never
    /// settles, each newcomer a walk of it. The newcomer waits until an entry falls silent.
    ///
    /// A walk that finds no entry to displace holds for one state-check step
    /// (`stateCheckGranularity`, as state changes do; `PeerTable.fullUntil`): on a network of
    /// many more nodes than the table holds, nearly every beacon is a newcomer's, and walking
    /// the table for each was most of a node's discovery work.
    mutating func makeRoom(now: UInt64, into directives: inout [DiscoveryDirective]) -> Bool {
        guard dynamicPeerCount >= configuration.maxPeers else { return true }
        if let fullUntil = records.fullUntil, now < fullUntil {
            counters.tableFull += 1
            return false
        }
        var victim: (rank: (Int, UInt64, UserID), id: UserID)?
        for record in records.values where !record.isStatic && record.link == nil {
            let rank: Int
            switch record.liveState(now: now, configuration) {
            case .gone: rank = 0
            case .suspect: rank = 1
            default:
                guard let (last, period) = record.evidence(configuration), now >= last + period + period / 2 else { continue }
                rank = 2
            }
            let key = (rank, record.lastSeen ?? record.lastMentioned ?? record.since, record.id)
            if victim == nil || key < victim!.rank { victim = (key, record.id) }
        }
        guard let victim else {
            counters.tableFull += 1
            records.fullUntil = now + max(1, configuration.stateCheckGranularity)
            return false
        }
        records[victim.id] = nil
        directives.append(.peerForgotten(victim.id))
        return true
    }

    /// Entries that count against `maxPeers` (all but static peers).
    var dynamicPeerCount: Int { records.count - records.staticCount }
}

/// What a beacon's (instance, seq) means for a known peer.
enum BeaconObservation: Sendable, Equatable {
    /// Seq not above the last one of that instance: drop it.
    case replay
    /// A leaving beacon from an instance that is no longer the current one.
    case staleLeaving
    /// News: the instance is now the peer's current one.
    case fresh
}

extension PeerRecord {
    /// Applies the replay rule: a beacon MUST carry a seq above the last one seen from its
    /// (identity, instance). A new instance id is a restart and becomes the current one.
    mutating func observe(instance: InstanceID, seq: UInt64, leaving: Bool) -> BeaconObservation {
        guard let index = instances.firstIndex(where: { $0.id == instance }) else {
            instances.insert((instance, seq), at: 0)
            if instances.count > Self.maxInstances { instances.removeLast() }
            return .fresh
        }
        guard seq > instances[index].lastSeq else { return .replay }
        instances[index].lastSeq = seq
        if index != 0 {
            if leaving { return .staleLeaving }
            instances.insert(instances.remove(at: index), at: 0)
        }
        return .fresh
    }
}
