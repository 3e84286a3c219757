import Gossip
import Identity
import LinkProtocol
import Replica
import Sodium
import Store
import Wire

/// Blobs between peers (BLOB_WANT / BLOB): serving the blobs a peer may have, and the shell of
/// the node's `BlobFetcher`, which fetches the blobs this node's views name and it lacks.
extension GossipHandler {
    /// Milliseconds between looks for missing blobs when nothing happened; a new link or new ops
    /// start a look sooner, but at most one every `blobScanMinimumInterval`.
    static let blobScanInterval: UInt64 = 5_000
    static let blobScanMinimumInterval: UInt64 = 1_000

    // MARK: - Receiving

    /// A BLOB_WANT or BLOB frame from `peer`; a malformed one breaks the protocol.
    func receivedBlobMessage(_ frame: SyncFrame, from peer: UserID, node: isolated Node) throws(LinkViolation) {
        let message: BlobMessage
        do {
            message = try BlobMessage.decode([frame.type] + frame.payload)
        } catch {
            throw LinkViolation("malformed \(frame.type == SyncMessageType.blob.rawValue ? "BLOB" : "BLOB_WANT"): \(error)")
        }
        switch message {
        case .want(let partition, let hash, let offset, let chunks):
            serveBlob(hash, in: partition, from: Int(offset), chunks: Int(chunks), to: peer, node: node)
        case .chunk(let chunk):
            feedBlobs(node: node) { fetcher, now in fetcher.onChunk(chunk, from: peer, now: now) }
        }
    }

    // MARK: - Serving

    /// Answers a BLOB_WANT: chunks of the blob if this node holds it, `partition`'s views name it
    /// and `peer` may read `partition`; "not here" otherwise (never data of another partition).
    func serveBlob(_ hash: Bytes32, in partition: PartitionID, from offset: Int, chunks: Int, to peer: UserID, node: isolated Node) {
        func send(_ chunk: BlobChunk) {
            let bytes = BlobMessage.chunk(chunk).encode()
            node.send(SyncFrame(type: bytes[0], payload: Array(bytes[1...])), to: peer)
        }
        let store = node.store!
        let allowed = storeCall(node, peer, "checking a blob request") { () throws -> Bool in
            guard let record = try store.log.partition(partition), try mayRead(record, peer: peer, store: store) else { return false }
            return try store.blobs.isBlobNamed(hash, in: partition)
        }
        guard let allowed else { return }
        guard allowed else { return send(.unavailable(partition, hash)) }
        // The blob is read once and kept while it is being served (SQLite reads a whole value
        // even for a substring): at most one blob of 8 MiB is held.
        if servedBlob?.hash != hash {
            guard let data = storeCall(node, peer, "reading a blob", { try store.blobs.blob(hash) }) else { return }
            servedBlob = data.map { (hash, $0) }
        }
        guard let blob = servedBlob?.data, blob.count <= BlobMessage.maxBlobBytes, offset <= blob.count else {
            return send(.unavailable(partition, hash))
        }
        var position = offset
        for _ in 0..<chunks {
            let end = min(blob.count, position + BlobMessage.chunkBytes)
            send(
                BlobChunk(
                    partition: partition, hash: hash, isAvailable: true, total: UInt32(blob.count), offset: UInt32(position), data: Array(blob[position..<end]))
            )
            position = end
            if position >= blob.count { return }
        }
    }

    /// `SyncPolicy.servesBlobs` with what the store knows of `record`.
    private func mayRead(_ record: ReplicaStore.PartitionRecord, peer: UserID, store: ReplicaStore) throws -> Bool {
        let members = record.descriptor.kind == .conversation ? try store.views.conversation(record.id)?.members.everMember ?? [] : []
        return SyncPolicy.servesBlobs(of: record.descriptor, to: peer, joined: record.joined, members: members)
    }

    // MARK: - Fetching

    /// Called every poll: timeouts, and a look for missing blobs when due.
    func blobTick(node: isolated Node) {
        let now = node.monotonicMillis
        feedBlobs(node: node) { fetcher, now in fetcher.onTick(now: now) }
        guard now >= lastBlobScan + Self.blobScanMinimumInterval, blobScanDue || now >= lastBlobScan + Self.blobScanInterval else { return }
        blobScanDue = false
        lastBlobScan = now
        wantMissingBlobs(node: node)
    }

    /// Asks the fetcher for every blob this node's views name and it lacks, from the linked peers
    /// that may hold each: anyone linked for a room or the directory, the linked current members
    /// for a conversation.
    func wantMissingBlobs(node: isolated Node) {
        guard !sessions.isEmpty else { return }
        let store = node.store!
        guard let missing = storeCall(node, nil, "looking for missing blobs", { try store.blobs.missingBlobs() }), !missing.isEmpty else { return }
        let linked = sessions.keys.sorted()
        for (partition, hash) in missing {
            guard let record = try? store.log.partition(partition) else { continue }
            var candidates = linked
            if record.descriptor.kind == .conversation {
                let members = (try? store.views.conversation(partition))??.members.current ?? []
                candidates = linked.filter { members.contains($0) }
            }
            guard !candidates.isEmpty else { continue }
            let request = BlobFetcher.Request(partition: partition, hash: hash)
            feedBlobs(node: node) { fetcher, now in fetcher.want(request, candidates: candidates, now: now) }
        }
    }

    /// Hands one event to the fetcher and carries out its directives in order.
    func feedBlobs(node: isolated Node, _ event: (inout BlobFetcher, UInt64) -> [BlobDirective]) {
        var pending = event(&blobs, node.monotonicMillis)
        while !pending.isEmpty {
            let directive = pending.removeFirst()
            pending += performBlob(directive, node: node)
        }
    }

    /// One flat switch over the fetcher's directives; returns what its answers lead to.
    private func performBlob(_ directive: BlobDirective, node: isolated Node) -> [BlobDirective] {
        switch directive {
        case .send(let message, let peer):
            let bytes = message.encode()
            node.send(SyncFrame(type: bytes[0], payload: Array(bytes[1...])), to: peer)
            return []
        case .verify(let request, let data, let peer):
            let matches = Bytes32(GenericHash.hash(data)) == request.hash
            if matches {
                let store = node.store!
                guard storeCall(node, nil, "storing a blob", { try store.blobs.storeBlob(data, nowMillis: node.wallMillis) }) != nil else { return [] }
                node.log.debug(.blob, "blob \(Base32.encode(Array(request.hash.bytes.prefix(5)))) (\(data.count) bytes) from \(node.displayName(of: peer))")
                node.emit(.changed([request.partition]))
            }
            return blobs.onVerified(request, from: peer, matches: matches, now: node.monotonicMillis)
        case .penalise(let peer, let reason):
            node.closeLink(to: peer, reason: .protocolViolation, violation: "blob: \(reason)")
            return []
        }
    }
}
