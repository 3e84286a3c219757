import Gossip
import Identity
import Replica
import TestSupport
import Testing
import Wire

/// BLOB_WANT / BLOB: the codec's limits and the fetcher's credit, order, verification and
/// penalties, with a manual clock.
@Suite struct BlobFetcherTests {
    let alice = Fixtures.identity(1).id
    let bob = Fixtures.identity(2).id
    let hash = Bytes32(w0: 1, w1: 2, w2: 3, w3: 4)
    var request: BlobFetcher.Request { BlobFetcher.Request(partition: lobby.id, hash: hash) }

    func chunk(total: Int, offset: Int, count: Int, fill: UInt8 = 7) -> BlobChunk {
        BlobChunk(
            partition: lobby.id, hash: hash, isAvailable: true, total: UInt32(total), offset: UInt32(offset), data: [UInt8](repeating: fill, count: count))
    }

    func want(offset: Int) -> BlobMessage {
        .want(partition: lobby.id, hash: hash, offset: UInt32(offset), chunks: BlobMessage.maxChunksPerWant)
    }

    @Test func codec_roundTrips_andRefusesWhatBreaksALimit() throws {
        for message in [want(offset: 5), .chunk(chunk(total: 10, offset: 2, count: 8)), .chunk(.unavailable(lobby.id, hash))] {
            #expect(try BlobMessage.decode(message.encode()) == message)
        }
        var bytes = BlobMessage.chunk(chunk(total: 10, offset: 2, count: 8)).encode()
        bytes.append(0)  // one byte past the total
        #expect(throws: SyncDecodingError.self) { try BlobMessage.decode(bytes) }
        var oversized = BlobMessage.chunk(chunk(total: 10, offset: 0, count: 1)).encode()
        oversized.replaceSubrange(66..<70, with: [0x00, 0x90, 0x00, 0x00])  // total 9 MiB
        #expect(throws: SyncDecodingError.self) { try BlobMessage.decode(oversized) }
        var noCredit = want(offset: 0).encode()
        noCredit[noCredit.count - 1] = 9
        #expect(throws: SyncDecodingError.self) { try BlobMessage.decode(noCredit) }
    }

    @Test func fetcher_asksOneWindowAtATime_thenVerifies() {
        var fetcher = BlobFetcher()
        let total = BlobMessage.chunkBytes * 9 + 10
        #expect(fetcher.want(request, candidates: [alice, bob], now: 0) == [.send(want(offset: 0), to: alice)])
        for index in 0..<8 {
            let directives = fetcher.onChunk(chunk(total: total, offset: index * BlobMessage.chunkBytes, count: BlobMessage.chunkBytes), from: alice, now: 1)
            #expect(directives == (index == 7 ? [.send(want(offset: 8 * BlobMessage.chunkBytes), to: alice)] : []))
        }
        #expect(fetcher.onChunk(chunk(total: total, offset: 8 * BlobMessage.chunkBytes, count: BlobMessage.chunkBytes), from: alice, now: 2) == [])
        let last = fetcher.onChunk(chunk(total: total, offset: 9 * BlobMessage.chunkBytes, count: 10), from: alice, now: 3)
        #expect(last == [.verify(request, data: [UInt8](repeating: 7, count: total), from: alice)])
        #expect(fetcher.onVerified(request, from: alice, matches: true, now: 4) == [])
        #expect(!fetcher.isWanted(hash) && fetcher.activeTransfers == 0)
    }

    @Test func fetcher_penalisesABadHash_andTriesTheNextPeer() {
        var fetcher = BlobFetcher()
        _ = fetcher.want(request, candidates: [alice, bob], now: 0)
        _ = fetcher.onChunk(chunk(total: 3, offset: 0, count: 3), from: alice, now: 1)
        let directives = fetcher.onVerified(request, from: alice, matches: false, now: 2)
        #expect(directives.count == 2)
        #expect(directives.first.map { if case .penalise(alice, _) = $0 { true } else { false } } == true)
        #expect(directives.last == .send(want(offset: 0), to: bob))
    }

    @Test func fetcher_penalisesChunksOutOfOrderOrBeyondTheCredit_andASizeThatChanges() {
        func penalised(_ directives: [BlobDirective]) -> Bool { directives.contains { if case .penalise = $0 { true } else { false } } }
        var fetcher = BlobFetcher()
        _ = fetcher.want(request, candidates: [alice], now: 0)
        #expect(penalised(fetcher.onChunk(chunk(total: 1 << 20, offset: BlobMessage.chunkBytes, count: BlobMessage.chunkBytes), from: alice, now: 1)))
        fetcher = BlobFetcher()
        _ = fetcher.want(request, candidates: [alice], now: 0)
        _ = fetcher.onChunk(chunk(total: 4 << 20, offset: 0, count: BlobMessage.chunkBytes), from: alice, now: 1)
        #expect(penalised(fetcher.onChunk(chunk(total: 5 << 20, offset: BlobMessage.chunkBytes, count: BlobMessage.chunkBytes), from: alice, now: 2)))
        fetcher = BlobFetcher()
        _ = fetcher.want(request, candidates: [alice], now: 0)
        #expect(penalised(fetcher.onChunk(chunk(total: 1 << 20, offset: 0, count: 100), from: alice, now: 1)), "a short chunk before the end")
        // A chunk nobody asked for is ignored, not stored.
        #expect(fetcher.onChunk(chunk(total: 3, offset: 0, count: 3), from: bob, now: 3) == [])
    }

    @Test func fetcher_movesOnWhenNotHere_orOnTimeout_andRestsWhenNoPeerHasIt() {
        var fetcher = BlobFetcher()
        _ = fetcher.want(request, candidates: [alice, bob], now: 0)
        #expect(fetcher.onChunk(.unavailable(lobby.id, hash), from: alice, now: 1) == [.send(want(offset: 0), to: bob)])
        #expect(fetcher.onTick(now: 1 + fetcher.transferTimeout) == [])
        #expect(fetcher.activeTransfers == 0 && fetcher.isWanted(hash))
        #expect(fetcher.want(request, candidates: [alice, bob], now: 20_000) == [], "both were tried: it rests")
        let after = 1 + fetcher.transferTimeout + fetcher.retryAfter
        #expect(fetcher.want(request, candidates: [alice, bob], now: after) == [.send(want(offset: 0), to: alice)])
        #expect(fetcher.onPeerGone(alice, now: after + 1) == [.send(want(offset: 0), to: bob)])
    }
}
