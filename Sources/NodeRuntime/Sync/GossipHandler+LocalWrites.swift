import Gossip
import Identity
import Replica
import Store

/// What the node holds, as the sessions see it: summaries per peer, and ops that other processes
/// (a `parley send` while the node runs) wrote into the store.
extension GossipHandler {
    // MARK: - Lifecycle

    public func nodeStarted(node: isolated Node) {
        let store = node.store!
        _ = storeCall(node, nil, "reading the store's change counter") {
            lastDataVersion = try store.dataVersion
            lastRowID = try store.log.latestOpRowID()
            knownPartitions = Set(try store.log.partitions().map(\.id))
        }
        watchLocalWrites(node: node)
    }

    /// Every `pollInterval`: other processes' writes, then the blob fetches due.
    private func watchLocalWrites(node: isolated Node) {
        watcher.arm(after: pollInterval, on: node) {
            guard node.isRunning else { return }
            _ = self.checkLocalWrites(node: node)
            self.blobTick(node: node)
            self.roomDirectoryTick(node: node)
            self.watchLocalWrites(node: node)
        }
    }

    public func nodeStopping(node: isolated Node) {
        watcher.cancel(on: node)
        for entry in sessions.values { entry.timer.cancel(on: node) }
        for peer in sessions.keys { noteSeen(peer, node: node) }
    }

    public func storeMayHaveChanged(node: isolated Node) -> Int {
        checkLocalWrites(node: node)
    }

    // MARK: - Other processes' writes

    /// Looks for ops another process committed since the last look, and hands them to every
    /// session (`onNewLocalOp`), or, above `livePushLimit`, re-sends the changed summaries; new
    /// partitions (a room joined) are listed to every peer. Returns the number of new ops.
    /// `ownWrite`: this process wrote (`Node.write`), which `data_version` does not show, so new
    /// ops are read whatever it says: while it stands still, from the write's first row (marked
    /// by `Node.write`), else all after the cursor. Without the mark, the check after an own
    /// write read again every op applied from peers since the last look (up to `pollInterval`
    /// ago) and handed each to every session a second time: at ten nodes, about as many session
    /// calls per own write as the applies themselves made.
    ///
    /// `PRAGMA data_version` moves only for other connections' commits, so while it stands
    /// still every new row is this node's own (already handed over when applied) and the row
    /// cursor just follows. Once it moved, the ops after the cursor are read; ops this node
    /// applied meanwhile may be among them, which is harmless (a session pushes an op once).
    ///
    /// After an own write that stored ops, the store usually knows them itself
    /// (`OpLog.takeOpsSinceMark()`), and the `data_version` it read inside the write's
    /// transaction: when no other process had written, every row up to the write's last is this
    /// node's own, and the write's ops go to the sessions without a read.
    @discardableResult
    func checkLocalWrites(node: isolated Node, ownWrite: Bool = false) -> Int {
        let store = node.store!
        if ownWrite, let written = store.log.takeOpsSinceMark(), let version = written.dataVersion, version == lastDataVersion,
            let last = written.lastRowID, written.ops.count <= Self.livePushLimit
        {
            lastRowID = max(lastRowID, last)
            handOver(written.ops, node: node)
            return written.ops.count
        }
        let found: (ops: [Operation], count: Int, partitionsChanged: Bool)? = storeCall(node, nil, "reading ops other processes wrote") {
            let newest = try store.log.latestOpRowID()
            let version = try store.dataVersion
            let external = version != lastDataVersion
            guard external || ownWrite else {
                lastRowID = max(lastRowID, newest)
                return ([], 0, false)
            }
            if ownWrite, !external {
                // Every row before this write's first is this node's own, handed over when
                // applied; a write that stored no op leaves nothing to read.
                lastRowID = max(lastRowID, store.log.firstOpRowIDSinceMark.map { $0 - 1 } ?? newest)
            }
            if external {
                lastDataVersion = version
                try store.refreshAfterExternalWrite()
                // A read marker or a room left changes no op: interfaces re-read what they show.
                if newest <= lastRowID { node.emit(.changed([])) }
            }
            var ops: [Operation] = []
            var count = 0
            while true {
                let page = try store.log.ops(afterRowID: lastRowID, limit: 1_000)
                lastRowID = page.lastRowID
                count += page.ops.count
                if count <= Self.livePushLimit { ops += page.ops }
                if page.ops.count < 1_000 { break }
            }
            // Partitions are never removed and `knownPartitions` holds only stored ones: a new
            // one shows in the count (a set of ids per write showed in profiles).
            let records = try store.log.partitions()
            let partitionsChanged = records.count != knownPartitions.count
            if partitionsChanged { knownPartitions = Set(records.map(\.id)) }
            return (count <= Self.livePushLimit ? ops : [], count, partitionsChanged)
        }
        guard let found else { return 0 }
        let bulk = found.count > Self.livePushLimit
        if found.partitionsChanged || bulk { refreshAllSummaries(node: node, resendChanged: bulk) }
        handOver(found.ops, count: found.count, partitionsChanged: found.partitionsChanged, external: !ownWrite, node: node)
        if bulk { node.emit(.changed([])) }
        return found.count
    }

    /// Tells subscribers about `ops` (found with `count` ops in all: above `livePushLimit`, none
    /// are listed and peers fetch them by summary) and hands each to every session.
    private func handOver(_ ops: [Operation], count: Int? = nil, partitionsChanged: Bool = false, external: Bool = false, node: isolated Node) {
        let count = count ?? ops.count
        localOpsFound += count
        if count > 0 {
            let source = external ? "written by another process" : "after this process's write"
            node.log.debug("found \(count) new ops \(source)" + (count > Self.livePushLimit ? "; peers fetch them by summary" : ""))
        }
        announce(applied: ops, partitionsChanged: partitionsChanged, node: node)
        for op in ops {
            feedAll(node: node) { _, session, now in session.onNewLocalOp(op, now: now) }
        }
    }

    // MARK: - Summaries

    /// Hands every session its current summaries (after a partition was added, or a bulk write).
    func refreshAllSummaries(node: isolated Node, resendChanged: Bool) {
        let peers = sessions.keys.sorted()
        guard let all = storeCall(node, nil, "reading the partitions", { try summaries(for: peers, node: node) }) else { return }
        for peer in peers {
            guard let summaries = all[peer] else { continue }
            feed(peer, node: node) { session, now in session.onLocalSummaries(summaries, resendChanged: resendChanged, now: now) }
        }
    }

    /// Every partition this node holds, with its digest and its sharing for each of `peers`
    /// (`SyncPolicy.summaries(of:for:)`).
    func summaries(for peers: [UserID], node: isolated Node) throws -> [UserID: [PartitionSummary]] {
        let store = node.store!
        // A room the user left is carried for others like any room a peer offered; a node that
        // carries nothing offers it no more, so it stops syncing (its ops stay stored).
        let carries = configuration.carriesForOthers
        let records = try store.log.partitions().filter { carries || $0.joined || $0.descriptor.kind != .room }
        let digests = try records.map { (descriptor: $0.descriptor, digest: try store.log.digest($0.id)) }
        let policy = try policy(records: records, node: node)
        try pinLinks(policy, node: node)
        return Dictionary(uniqueKeysWithValues: peers.map { ($0, policy.summaries(of: digests, for: $0)) })
    }

    /// Tells Discovery which peers to keep linked whatever the overlay picks
    /// (`SyncPolicy.linksToPin`), when the overlay is on.
    func pinLinks(_ policy: SyncPolicy, node: isolated Node) throws {
        guard node.configuration.activePeers != nil else { return }
        let devices = try node.store!.devices.deviceKeys(of: node.me)
        node.pinLinks(policy.linksToPin(person: node.me, devices: devices))
    }

    /// The sync policy for this node's user and the conversations it knows.
    func policy(records: [ReplicaStore.PartitionRecord]? = nil, node: isolated Node) throws -> SyncPolicy {
        let store = node.store!
        var members: [PartitionID: Set<UserID>] = [:]
        var carried = 0
        for record in try records ?? store.log.partitions() {
            if record.descriptor.kind == .conversation, let conversation = try store.views.conversation(record.id) {
                members[record.id] = conversation.members.everMember
            }
            if try store.carrier.isCarried(record.id) { carried += 1 }
        }
        return SyncPolicy(
            localUser: node.identity.id, conversationMembers: members, carriesForOthers: configuration.carriesForOthers, carriedCount: carried)
    }
}
