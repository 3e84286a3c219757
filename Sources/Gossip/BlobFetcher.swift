import Identity
import Replica
import Wire

/// Fetching blobs from linked peers, as a pure state machine: one per node (docs/DESIGN.md §4.3).
///
/// The shell says which blobs it lacks (`want`, with the linked peers that may hold each), hands
/// over every BLOB it receives (`onChunk`), the result of checking an assembled blob's hash
/// (`onVerified`), links that end (`onPeerGone`) and timer ticks (`onTick`); it carries out the
/// returned `BlobDirective`s in order.
///
/// Rules it follows:
/// - One transfer per peer at a time and at most `maxTransfers` at once, so memory stays bounded
///   (`maxTransfers` × `BlobMessage.maxBlobBytes`, 32 MiB by default); a blob is fetched from
///   one peer at a time.
/// - Credit: each BLOB_WANT asks for `BlobMessage.maxChunksPerWant` chunks (1 MiB); the next
///   goes out when they have all arrived.
/// - A chunk MUST come from the peer asked, for the blob asked, at the next expected offset,
///   within the credit and with the `total` of the transfer's first chunk; anything else, and a
///   blob whose hash does not match, is a violation (`.penalise`) and the next peer is tried.
///   A chunk for a transfer that ended (a late answer after a timeout) is ignored.
/// - "Not here", a link that ends, or `transferTimeout` without a chunk: the next candidate is
///   asked. When none is left, the blob rests for `retryAfter` (unless `want` names a peer not
///   tried yet, as after a new link).
public struct BlobFetcher: Sendable {
    /// A blob and the partition whose views name it.
    public struct Request: Hashable, Sendable {
        public var partition: PartitionID
        public var hash: Bytes32
        public init(partition: PartitionID, hash: Bytes32) { (self.partition, self.hash) = (partition, hash) }
    }

    struct Transfer: Sendable {
        var request: Request
        var total: Int?
        var data: [UInt8] = []
        /// The offset up to which chunks were asked for.
        var askedUpTo: Int
        var lastActivity: UInt64
    }

    struct Wanted: Sendable {
        var partition: PartitionID
        var candidates: [UserID] = []
        var tried: Set<UserID> = []
        var restingUntil: UInt64?
    }

    public var maxTransfers = 4
    /// Milliseconds without a chunk after which a transfer moves to the next peer.
    public var transferTimeout: UInt64 = 10_000
    /// Milliseconds a blob rests after every candidate was tried.
    public var retryAfter: UInt64 = 30_000
    /// At most this many blobs are remembered as wanted (the shell asks again later).
    public var maxWanted = 1_024

    var wanted: [Bytes32: Wanted] = [:]
    var transfers: [UserID: Transfer] = [:]
    var outbox: [BlobDirective] = []

    public init() {}

    /// Blobs being fetched now.
    public var activeTransfers: Int { transfers.count }
    /// Whether `hash` is wanted (waiting, resting or being fetched).
    public func isWanted(_ hash: Bytes32) -> Bool { wanted[hash] != nil }

    // MARK: - Events

    /// The node lacks this blob; `candidates` are linked peers that may hold it, in the order to
    /// try them. Wanting a blob again adds candidates and wakes it if a new one came.
    public mutating func want(_ request: Request, candidates: [UserID], now: UInt64) -> [BlobDirective] {
        if var entry = wanted[request.hash] {
            if let rest = entry.restingUntil, now >= rest { (entry.restingUntil, entry.tried) = (nil, []) }
            let fresh = candidates.filter { !entry.tried.contains($0) && !entry.candidates.contains($0) }
            entry.candidates += fresh
            if !fresh.isEmpty { entry.restingUntil = nil }
            wanted[request.hash] = entry
        } else if wanted.count < maxWanted {
            wanted[request.hash] = Wanted(partition: request.partition, candidates: candidates)
        }
        startTransfers(now: now)
        return finish()
    }

    /// A BLOB from `peer`.
    public mutating func onChunk(_ chunk: BlobChunk, from peer: UserID, now: UInt64) -> [BlobDirective] {
        guard var transfer = transfers[peer], transfer.request.hash == chunk.hash, transfer.request.partition == chunk.partition else {
            return []
        }
        guard chunk.isAvailable else {
            endTransfer(of: peer, now: now)
            return finish()
        }
        let total = Int(chunk.total)
        if let known = transfer.total, known != total {
            return penalise(peer, "blob \(chunk.hash.hexPrefix) changed its size from \(known) to \(total) bytes", now: now)
        }
        guard total <= BlobMessage.maxBlobBytes else {
            return penalise(peer, "blob \(chunk.hash.hexPrefix) of \(total) bytes is over the limit", now: now)
        }
        guard Int(chunk.offset) == transfer.data.count, transfer.data.count + chunk.data.count <= min(total, transfer.askedUpTo) else {
            return penalise(peer, "blob \(chunk.hash.hexPrefix): a chunk at \(chunk.offset) beyond what was asked", now: now)
        }
        let full = Int(chunk.offset) + chunk.data.count == total
        guard full || chunk.data.count == BlobMessage.chunkBytes else {
            return penalise(peer, "blob \(chunk.hash.hexPrefix): a short chunk before the end", now: now)
        }
        if transfer.total == nil { transfer.data.reserveCapacity(total) }
        transfer.total = total
        transfer.data += chunk.data
        transfer.lastActivity = now
        if full {
            transfers[peer] = nil
            outbox.append(.verify(transfer.request, data: transfer.data, from: peer))
        } else {
            if transfer.data.count == transfer.askedUpTo { ask(&transfer, from: peer) }
            transfers[peer] = transfer
        }
        return finish()
    }

    /// The shell hashed an assembled blob: stored when it matched, a violation when not.
    public mutating func onVerified(_ request: Request, from peer: UserID, matches: Bool, now: UInt64) -> [BlobDirective] {
        if matches {
            wanted[request.hash] = nil
            startTransfers(now: now)
            return finish()
        }
        wanted[request.hash]?.tried.insert(peer)
        outbox.append(.penalise(peer, reason: "blob \(request.hash.hexPrefix) does not hash to what it claimed"))
        startTransfers(now: now)
        return finish()
    }

    /// `peer`'s link ended: its transfer moves to the next candidate.
    public mutating func onPeerGone(_ peer: UserID, now: UInt64) -> [BlobDirective] {
        if transfers[peer] != nil { endTransfer(of: peer, now: now) }
        for hash in wanted.keys { wanted[hash]?.candidates.removeAll { $0 == peer } }
        startTransfers(now: now)
        return finish()
    }

    /// Timeouts and blobs whose rest is over.
    public mutating func onTick(now: UInt64) -> [BlobDirective] {
        for (peer, transfer) in transfers where now >= transfer.lastActivity + transferTimeout {
            endTransfer(of: peer, now: now)
        }
        startTransfers(now: now)
        return finish()
    }

    // MARK: - Steps

    private mutating func penalise(_ peer: UserID, _ reason: String, now: UInt64) -> [BlobDirective] {
        outbox.append(.penalise(peer, reason: reason))
        endTransfer(of: peer, now: now)
        return finish()
    }

    /// Drops `peer`'s transfer (its blob stays wanted) and marks the peer tried for it.
    private mutating func endTransfer(of peer: UserID, now: UInt64) {
        guard let transfer = transfers.removeValue(forKey: peer) else { return }
        wanted[transfer.request.hash]?.tried.insert(peer)
        startTransfers(now: now)
    }

    /// Starts transfers for wanted blobs, each from its next untried candidate that is free.
    private mutating func startTransfers(now: UInt64) {
        let busyBlobs = Set(transfers.values.map(\.request.hash))
        for hash in wanted.keys.sorted() {
            guard transfers.count < maxTransfers else { return }
            guard var entry = wanted[hash], !busyBlobs.contains(hash) else { continue }
            if let rest = entry.restingUntil {
                guard now >= rest else { continue }
                entry.restingUntil = nil
                entry.tried = []
            }
            entry.candidates.removeAll { entry.tried.contains($0) }
            guard let peer = entry.candidates.first(where: { transfers[$0] == nil }) else {
                if entry.candidates.isEmpty {
                    entry.restingUntil = now + retryAfter
                }
                wanted[hash] = entry
                continue
            }
            wanted[hash] = entry
            var transfer = Transfer(request: Request(partition: entry.partition, hash: hash), askedUpTo: 0, lastActivity: now)
            ask(&transfer, from: peer)
            transfers[peer] = transfer
        }
    }

    /// Asks for the next window of chunks.
    private mutating func ask(_ transfer: inout Transfer, from peer: UserID) {
        let offset = transfer.data.count
        transfer.askedUpTo = offset + Int(BlobMessage.maxChunksPerWant) * BlobMessage.chunkBytes
        let want = BlobMessage.want(
            partition: transfer.request.partition, hash: transfer.request.hash, offset: UInt32(offset), chunks: BlobMessage.maxChunksPerWant)
        outbox.append(.send(want, to: peer))
    }

    private mutating func finish() -> [BlobDirective] {
        defer { outbox = [] }
        return outbox
    }
}

/// What a `BlobFetcher` asks its shell to do.
public enum BlobDirective: Hashable, Sendable {
    /// Send this message on `peer`'s link.
    case send(BlobMessage, to: UserID)
    /// Hash `data`; if it is `request.hash`, store it and tell subscribers; then call
    /// `onVerified` with the result.
    case verify(BlobFetcher.Request, data: [UInt8], from: UserID)
    /// Close `peer`'s link as a protocol violation (it counts towards a ban).
    case penalise(UserID, reason: String)
}

extension Bytes32 {
    /// The first bytes in hex, for logs.
    var hexPrefix: String {
        Base32.encode(Array(bytes.prefix(5)))
    }
}
