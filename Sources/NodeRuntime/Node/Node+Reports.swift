import Discovery
import Foundation
import Identity
import Replica
import Transport

/// The node's answers on the control socket: peers, status, doctor.
extension Node {
    /// Answers one control request.
    public func respond(to request: ControlRequest) -> ControlResponse {
        switch request.request {
        case .ping: ControlResponse(pong: PongReport(pid: getpid(), id: identity.id.text))
        case .peers: ControlResponse(peers: peers())
        case .status: ControlResponse(status: status())
        case .doctor: ControlResponse(doctor: doctor())
        case .poke: ControlResponse(poke: PokeReport(ops: isRunning ? handler.storeMayHaveChanged(node: self) : 0))
        case .presence:
            ControlResponse(
                presence: livePresence().sorted { $0.key < $1.key }.map {
                    PresenceReport(id: $0.key.text, linked: $0.value.linked, lastSeen: $0.value.lastSeenMillis)
                })
        case .typing: typingRequested(request.partition)
        // The control server streams the events after this answer.
        case .watch: ControlResponse(watch: true)
        case .author: author(request.author)
        case .faults: applyFaults(request.faults)
        case .rooms: roomsRequested()
        case .wipe: wipeRequested()
        }
    }

    private func roomsRequested() -> ControlResponse {
        guard isRunning, store != nil else { return .failure("the node is not running") }
        do {
            return ControlResponse(
                rooms: try roomDirectory().map {
                    RoomReport(name: $0.name.value, topic: $0.topic, people: $0.people, joined: $0.joined, listedBy: $0.listedBy)
                })
        } catch {
            return .failure("cannot read the rooms: \(error)")
        }
    }

    /// The keys go before the answer, so a caller that hears it knows the data cannot be read;
    /// the files and the node follow once the answer is written (`ControlServer` calls `wipe()`),
    /// so stopping never cuts the answer off.
    private func wipeRequested() -> ControlResponse {
        wipeKeys()
        return ControlResponse(wipe: true)
    }

    private func typingRequested(_ partition: String?) -> ControlResponse {
        guard let partition = partition.flatMap({ PartitionID(text: $0) }) else {
            return .failure("typing needs \"partition\": the id of a room or conversation")
        }
        typing(in: partition)
        return ControlResponse(typing: true)
    }

    /// The peer table with nicks, link directions and wall-clock times.
    public func peers() -> [PeerReport] {
        guard let discovery else { return [] }
        return discovery.peers.map { info in
            let link = current[info.id].flatMap { links[$0]?.link }
            return PeerReport(
                id: info.id.text, nick: nick(of: info.id), addresses: info.addresses.map(\.description),
                state: info.state.rawValue, since: clock.wallMillis(at: info.since),
                lastSeen: info.lastSeen.map { clock.wallMillis(at: $0) }, direction: link?.direction,
                origin: info.origin.rawValue, isStatic: info.isStatic)
        }
    }

    /// What `parley status` shows.
    public func status() -> StatusReport {
        let ops = (try? store?.log.opCount()) ?? 0
        return StatusReport(
            pid: getpid(), startedAt: clock.wallMillis(at: 0), id: identity.id.text, nick: nick,
            dataDirectory: configuration.dataDirectory, listen: listener?.localAddress.description ?? "",
            discoveryPort: udp?.localAddress.port, broadcastTargets: udp == nil ? [] : broadcastTargets,
            links: current.count, peersKnown: discovery?.peers.count ?? 0, storeOps: ops, sync: handler.syncStatus(node: self),
            forks: forkReports())
    }

    /// The store's forked chains, for `status` and `doctor`.
    func forkReports() -> [ForkReport] {
        ((try? store?.forks.chains()) ?? []).map(ForkReport.init)
    }

    /// What `parley doctor` explains.
    public func doctor() -> DoctorReport {
        let now = clock.now()
        let diagnostics = discovery.diagnostics
        let sent = beaconSender?.snapshot
        let interfaces = NodeConfiguration.interfaceReports()
        let rejections = diagnostics.rejected.sorted { $0.value.count > $1.value.count }.map { reason, rejection in
            DoctorReport.Rejection(
                reason: "\(reason)", explanation: Self.explain(reason, from: rejection.lastSource.host),
                count: rejection.count, lastSource: rejection.lastSource.description)
        }
        let admissionSnapshot = admission.snapshot(now: now)
        return DoctorReport(
            interfaces: interfaces, broadcastTargets: udp == nil ? [] : broadcastTargets,
            sockets: .init(
                listen: listener?.localAddress.description ?? "", discoveryPort: udp?.localAddress.port,
                controlSocket: configuration.controlSocketPath),
            beacons: .init(
                sent: sent?.sent ?? 0, sendFailures: sent?.failed ?? 0, lastSendError: sent?.lastError,
                ownHeard: diagnostics.ownBeaconsHeard, accepted: diagnostics.accepted, replayed: diagnostics.replayed,
                rateLimited: diagnostics.rateLimited, oversized: udp?.oversizedDatagramCount ?? 0,
                duplicateIdentity: diagnostics.duplicateIdentity, duplicateIdentitySource: duplicateIdentitySource?.description,
                dialsDeferred: diagnostics.dialsDeferred),
            sources: diagnostics.sources.map {
                .init(
                    host: $0.host, heard: $0.heard, rejected: $0.rejected, rateLimited: $0.rateLimited,
                    lastHeard: clock.wallMillis(at: $0.lastHeard))
            },
            rejections: rejections, peersFile: configuration.peersFile, staticPeers: staticEntries(),
            links: current.count, unlinked: unlinkedPeers(now: now),
            admission: .init(
                unauthenticated: admissionSnapshot.unauthenticated, refused: admissionSnapshot.refused,
                linksRefused: admissionSnapshot.linksRefused,
                violations: admissionSnapshot.violations,
                bannedHosts: admissionSnapshot.bannedHosts.keys.sorted(),
                bannedPeers: admissionSnapshot.bannedPeers.keys.sorted().map(\.text)),
            clocks: clockReports(), forks: forkReports())
    }

    /// Clocks at least `reportedClockOffsetMillis` off this node's: linked peers' (from their
    /// HELLOs) and the authors whose ops wait for their stamps here, the farthest first.
    private func clockReports() -> [DoctorReport.Clock] {
        var clocks: [DoctorReport.Clock] = []
        for peer in current.keys {
            guard let offset = notes[peer]?.clockOffset, offset.millis.magnitude >= Self.reportedClockOffsetMillis else { continue }
            clocks.append(.init(id: peer.text, nick: notes[peer]?.nick, aheadMillis: offset.millis, source: "link"))
        }
        for (author, lead) in stampsAhead {
            clocks.append(.init(id: author.text, nick: notes[author]?.nick, aheadMillis: lead.millis, source: "held ops"))
        }
        return clocks.sorted { ($0.aheadMillis.magnitude, $1.id) > ($1.aheadMillis.magnitude, $0.id) }
    }

    /// The smallest clock offset `parley doctor` names: below it, the difference is the link's
    /// travel time and the HLC absorbs it.
    static let reportedClockOffsetMillis: UInt64 = 1_000

    /// Notes that `author`'s op, stamped `stamp`, waits here for its time.
    func noteStampAhead(of author: UserID, _ stamp: HLC) {
        let lead = Int64(clamping: stamp.wallMillis) - Int64(clamping: wallMillis)
        if stampsAhead[author] == nil, stampsAhead.count >= Self.maxStampsAhead,
            let oldest = stampsAhead.min(by: { $0.value.at < $1.value.at })?.key
        {
            stampsAhead[oldest] = nil
        }
        stampsAhead[author] = (lead, clock.now())
    }

    /// What a rejected beacon means for the person reading doctor's output.
    static func explain(_ reason: BeaconError, from host: String) -> String {
        switch reason {
        case .badMAC: "a node at \(host) uses a different network secret (--network-secret-file)"
        case .badMagic: "a program at \(host) that is not Parley sends to the discovery port"
        case .unsupportedVersion: "a node at \(host) runs another Parley version"
        case .wrongLength: "damaged or foreign datagrams from \(host)"
        case .invalidPort, .invalidInterval: "malformed beacons from \(host)"
        }
    }

    private func staticEntries() -> [DoctorReport.StaticEntry] {
        var entries: [DoctorReport.StaticEntry] = []
        for peer in configuration.staticPeers {
            let owner = peer.key ?? discovery.peers.first { $0.isStatic && $0.addresses.contains(peer.endpoint) }?.id
            let state = owner.flatMap { discovery.peer($0)?.state.rawValue } ?? "key unknown"
            entries.append(.init(endpoint: peer.endpoint.description, key: owner?.text, state: state))
        }
        return entries
    }

    /// Every known peer without a link, with the reason in words.
    private func unlinkedPeers(now: UInt64) -> [DoctorReport.Unlinked] {
        var result: [DoctorReport.Unlinked] = discovery.peers.filter { current[$0.id] == nil }.map { info in
            .init(
                id: info.id.text, nick: nick(of: info.id), state: info.state.rawValue,
                addresses: info.addresses.map(\.description), why: whyUnlinked(info, now: now))
        }
        for (endpoint, nextDial) in discovery.keylessStaticPeers {
            var why = "listed without a key in the peers file; its key is learnt by a key probe"
            if let failure = keylessNotes[endpoint] { why += "; the last probe failed: \(failure)" }
            if nextDial > now { why += "; next try in \(Self.seconds(nextDial - now))" }
            result.append(.init(id: "", nick: nil, state: "key unknown", addresses: [endpoint.description], why: why))
        }
        return result
    }

    private func whyUnlinked(_ info: PeerInfo, now: UInt64) -> String {
        if let until = admission.banExpiry(peer: info.id, now: now) {
            return "banned for \(Self.seconds(until - now)) after repeated protocol violations"
        }
        var parts: [String] = []
        switch info.state {
        case .gone: parts.append(info.lastSeen == nil ? "never heard" : "gone: nothing heard from it for three beacon intervals, or it left")
        case .suspect: parts.append("suspect: its beacons are late")
        case .discovered, .linked: break
        }
        if info.lastSeen == nil, info.state != .gone {
            parts.append(info.isStatic ? "never heard (only listed in the peers file)" : "never heard directly (named by a linked peer)")
        }
        if let failure = notes[info.id]?.lastFailure {
            let place = failure.endpoint.map { " at \($0)" } ?? ""
            parts.append("the last attempt\(place) \(Self.seconds(now - failure.at)) ago failed: \(failure.reason)")
        }
        if dialing.contains(info.id) {
            parts.append("a dial is under way")
        } else if let next = discovery.nextDialTime(for: info.id) {
            parts.append(next > now ? "next dial in \(Self.seconds(next - now)) (backoff)" : "a dial is due")
        } else if info.state != .gone, !info.addresses.isEmpty {
            parts.append("waiting for it to dial (it has the smaller key)")
        } else if info.addresses.isEmpty {
            parts.append("no address to dial")
        }
        return parts.joined(separator: "; ")
    }

    /// A peer's nick: from its HELLO, else its directory profile.
    func nick(of peer: UserID) -> String? {
        notes[peer]?.nick ?? (try? store?.directory.profile(peer)?.nick) ?? nil
    }

    static func seconds(_ millis: UInt64) -> String {
        millis < 10_000 ? "\(Double(millis / 100) / 10) s" : "\(millis / 1000) s"
    }
}
