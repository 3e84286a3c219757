import Discovery
import Foundation
import Gossip
import Identity
import Replica
import SecureLink
import Sodium
import TestSupport
import Testing
import Transport
import Wire

@testable import NodeRuntime

/// Issue 10's abuse cases at the sync layer: an authenticated peer that floods ops, asks for
/// partitions it may not read, or sends the largest pages the protocol allows.
extension NodeProcessTests.AbuseProcessTests {
    // MARK: 4. Op flood from one author

    /// Sends `ops` as NEW_OPs as fast as the victim takes them (100 frames a write) until they
    /// are all sent, the link fails, or `duration` passed; returns how many were sent.
    static func pushNewOps(_ ops: ArraySlice<Replica.Operation>, on attacker: Attacker, for duration: Duration) async -> Int {
        var next = ops.startIndex
        let stop = ContinuousClock.now + duration
        while next < ops.endIndex, ContinuousClock.now < stop {
            let batch = ops[next..<min(next + 100, ops.endIndex)]
            guard let bytes = try? batch.flatMap({ try attacker.frame(.newOp($0)) }), (try? await attacker.sendRaw(bytes)) != nil else { break }
            next += batch.count
        }
        return next - ops.startIndex
    }

    /// The limit an op flood runs into, and what the victim's log says when it does.
    enum FloodLimit: String, CaseIterable, Sendable {
        /// 50 frames a second, a burst of 250: far above the honest node's few frames a second.
        case frames
        /// 50 NEW_OPs of one author a second, a burst of 500 (ten seconds' worth); an honest
        /// node pushes at most 80% of it and lets the rest be fetched by WANT.
        case authorPushes

        var options: [String] {
            switch self {
            case .frames: ["--rate-limit", "50"]
            case .authorPushes: ["--author-rate-limit", "50"]
            }
        }

        var logged: String {
            switch self {
            case .frames: "flood: more than 50 frames a second"
            case .authorPushes: "push flood: more than 50 ops a second"
            }
        }
    }

    @Test(arguments: FloodLimit.allCases)
    func opFlood_fromOneAuthor_dropsAndBansIt_andStoresABoundedPart(_ limit: FloodLimit) async throws {
        let cluster = NodeCluster(slot: 21)  // both cases: the suite is serialized
        defer { cluster.shutdown() }
        let scene = try await AbuseScene(cluster, victimOptions: limit.options)
        let before = scene.memory()
        let done = Flag()
        let (port, victimID) = (scene.port, scene.victimID)
        let flooder = Fixtures.identity(202)
        var factory = OpFactory()
        let ops = (0..<4_000).map { factory.make(post("flood \($0)"), in: lobby.id, by: flooder) }

        // The victim's HELLO deadline (2 s) runs from the handshake's end: the attack's steps
        // wait for no other test's work.
        let attack = Task(executorPreference: Attacker.loop) { () -> (links: Int, sent: Int, ended: Int, stop: String) in
            defer { done.set() }
            var (links, sent, ended) = (0, 0, 0)
            let violations = await scene.doctor()?.admission.violations ?? 0
            for attempt in 1...4 {
                let from = Int(scene.victimLobbySeq(of: flooder.id))
                guard from < ops.count else { return (links, sent, ended, "all ops stored") }
                let attacker: Attacker
                do {
                    attacker = try await Attacker.handshake(with: victimID, at: "127.0.0.1", port: port, from: "127.0.0.11", as: flooder)
                } catch {
                    return (links, sent, ended, "handshake \(attempt) failed: \(error)")
                }
                defer { attacker.close() }
                do {
                    _ = try await attacker.linkAndOffer([lobby])
                } catch {
                    return (links, sent, ended, "link \(attempt) failed: \(error)")
                }
                links += 1
                sent += await Self.pushNewOps(ops[from...], on: attacker, for: .seconds(10))
                if await attacker.drain(until: .now + .seconds(10)).endedAt != nil { ended += 1 }
                await scene.awaitViolations(violations + UInt64(ended))
            }
            return (links, sent, ended, "four links made")
        }
        let latencies = try await scene.honestLatencies(until: done)
        let (links, sent, ended, stop) = await attack.value
        let doctor = await scene.report("op flood", latencies: latencies, before: before)

        let stored = scene.victimLobbySeq(of: flooder.id)
        print("AbuseProcessTests [op flood, \(limit) limit]: \(links) links, \(sent) NEW_OPs sent, \(ended) links dropped, \(stored) flood ops stored")
        #expect(
            links == 3,
            """
            the flooder linked \(links) times (then: \(stop)); three violations should ban it; the victim's log ends:
            \(scene.victimLog.split(separator: "\n").suffix(25).joined(separator: "\n"))
            """)
        #expect(ended == links, "a flooding link was not dropped")
        #expect(stored < UInt64(sent), "every flood op was stored")
        // Each link is cut within its burst plus what the limit refills meanwhile.
        #expect(stored <= 3 * 1_000, "\(stored) flood ops stored")
        let admission = try #require(doctor?.admission)
        #expect(admission.bannedPeers.contains(flooder.id.text), "the flooder is not banned")
        #expect(admission.bannedHosts.contains("127.0.0.11"), "the flooding address is not banned")
        #expect(scene.victimLog.contains(limit.logged))
    }

    /// The same flood at the default limits (20,000 frames a second, a burst of 100,000; 1,000
    /// pushes of one author a second, a burst of 10,000). A node reads a link only as fast as it
    /// applies what arrives — hundreds to a few thousand ops a second here — so 6,000 valid ops
    /// stay within both bursts and the flooder keeps its link: ops are data a member may write
    /// (SECURITY.md, known gaps). What this shows is that the flood is paced by the victim rather
    /// than queued: memory stays bounded, and the honest pair keeps talking meanwhile. The
    /// figures say how far the flood got.
    @Test func opFlood_atTheDefaultLimits_isPacedByTheVictim_andTheHonestPairKeepsTalking() async throws {
        let cluster = NodeCluster(slot: 24)
        defer { cluster.shutdown() }
        let scene = try await AbuseScene(cluster)
        let before = scene.memory()
        let done = Flag()
        let (port, victimID) = (scene.port, scene.victimID)
        let flooder = Fixtures.identity(205)
        var factory = OpFactory()
        let ops = (0..<6_000).map { factory.make(post("flood \($0)"), in: lobby.id, by: flooder) }

        let attack = Task { () -> (sent: Int, cut: Bool, applying: Duration) in
            defer { done.set() }
            guard
                let attacker = try? await Attacker.handshake(with: victimID, at: "127.0.0.1", port: port, from: "127.0.0.14", as: flooder),
                (try? await attacker.linkAndOffer([lobby])) != nil
            else { return (0, false, .zero) }
            defer { attacker.close() }
            let start = ContinuousClock.now
            let sent = await Self.pushNewOps(ops[...], on: attacker, for: .seconds(10))
            // Most of it waits in socket buffers: wait until the victim stops storing (no change
            // for a second), reading what it sends meanwhile.
            var (stored, lastChange) = (scene.victimLobbySeq(of: flooder.id), ContinuousClock.now)
            var cut = false
            while ContinuousClock.now < lastChange + .seconds(1), ContinuousClock.now < start + .seconds(30), !cut {
                switch await attacker.next(deadline: .now + .milliseconds(100)) {
                case .closed, .goodbye: cut = true
                case .message, .timedOut: break
                }
                let now = scene.victimLobbySeq(of: flooder.id)
                if now != stored { (stored, lastChange) = (now, .now) }
            }
            return (sent, cut, lastChange - start)
        }
        let latencies = try await scene.honestLatencies(until: done)
        let (sent, cut, applying) = await attack.value
        let stored = scene.victimLobbySeq(of: flooder.id)
        _ = await scene.report("op flood at the default limits", latencies: latencies, before: before)
        print(
            "AbuseProcessTests [op flood at the default limits]: \(sent) NEW_OPs sent, \(stored) stored in "
                + "\(AbuseScene.Latencies.ms(applying)) ms, link \(cut ? "cut" : "kept")")
        #expect(sent > 0, "the flooder could not link")
    }

    // MARK: 5. WANT for partitions the peer may not read

    /// What crossed to the reader about the victim's private partitions.
    struct ReadOutcome: Sendable {
        var links = 0
        var ended = 0
        /// Messages that carried something of `self` (anything but a "not here" blob answer),
        /// a conversation blob, or the conversation's plaintext.
        var leaked: [String] = []
        var notHere = 0
        /// Conversation ops received as a carrier (ciphertext, by design).
        var carried = 0
    }

    /// The victim's own data (`self`, never offered to another user) and a conversation of
    /// the victim and the honest user that the attacker is not a member of. Per SyncPolicy a
    /// conversation is offered to every peer as ciphertext (store and forward), so the
    /// attacker may carry its encrypted ops — but never read them or its blobs; `self` is
    /// never offered, and a WANT for a partition never offered closes the link as a
    /// violation (GossipSession+Serve). A VECTOR for it is ignored; a BLOB_WANT is answered
    /// "not here".
    @Test func wantsForUnreadablePartitions_getNothingReadable_closeTheLink_andBan() async throws {
        let cluster = NodeCluster(slot: 22)
        defer { cluster.shutdown() }
        let scene = try await AbuseScene(cluster)
        let victimClient = try ControlClient.connect(dataDirectory: scene.victim.dataDir)
        let created = try await victimClient.send(
            ControlRequest(.author, author: AuthorRequest(kind: "conversation-create", text: "secret plans", members: [scene.honest.id])))
        let conversation = try #require(created.author.flatMap { PartitionID(text: $0.partition) }, "\(created)")
        let posted = try await victimClient.send(
            ControlRequest(.author, author: AuthorRequest(kind: "post", conversation: conversation.text, text: "private words")))
        #expect(posted.ok, "\(posted)")
        victimClient.close()
        let own = PartitionDescriptor.ownData(owner: scene.victimID).id
        let before = scene.memory()
        let done = Flag()
        let (port, victimID) = (scene.port, scene.victimID)
        let reader = Fixtures.identity(203)
        let plaintexts = ["secret plans", "private words"].map { Array($0.utf8) }

        let attack = Task { () -> ReadOutcome in
            defer { done.set() }
            var outcome = ReadOutcome()
            let violations = await scene.doctor()?.admission.violations ?? 0
            for target in [own, conversation, own, own] {
                guard let attacker = try? await Attacker.handshake(with: victimID, at: "127.0.0.1", port: port, from: "127.0.0.12", as: reader)
                else { break }
                defer { attacker.close() }
                guard var seen = try? await attacker.linkAndOffer([lobby]) else { break }
                outcome.links += 1
                let head = Head(author: victimID, maxSeq: 1, headID: OpID(Bytes32(Sodium.randomBytes(32))!))
                try? await attacker.send(.vector(partition: target, more: false, heads: [head]))
                try? await attacker.send(BlobMessage.want(partition: target, hash: Bytes32(Sodium.randomBytes(32))!, offset: 0, chunks: 8))
                if target == conversation {
                    // As a carrier: list the conversation (its descriptor came with the
                    // victim's SUMMARY) and ask for its ops; they come, encrypted.
                    let descriptor = seen.compactMap { message -> PartitionDescriptor? in
                        guard case .summary(_, let entries)? = Attacker.syncMessage(message) else { return nil }
                        return entries.first { $0.partition == conversation }?.descriptor
                    }.first
                    if let descriptor {
                        try? await attacker.send(
                            .summary(more: false, entries: [SummaryEntry(descriptor, digest: PartitionDigest(heads: []), revealDescriptor: true)]))
                        try? await attacker.send(.want(partition: conversation, author: victimID, fromSeq: 1, maxCount: 256))
                        let deadline = ContinuousClock.now + .seconds(5)
                        answer: while true {
                            switch await attacker.next(deadline: deadline) {
                            case .message(let message):
                                seen.append(message)
                                if case .ops(let batch)? = Attacker.syncMessage(message), batch.partition == conversation, batch.isLast { break answer }
                            default: break answer
                            }
                        }
                    }
                }
                // A WANT for `self`, never offered: the link closes.
                try? await attacker.send(.want(partition: own, author: victimID, fromSeq: 1, maxCount: 256))
                let (messages, endedAt) = await attacker.drain(until: .now + .seconds(10))
                seen += messages
                if endedAt != nil { outcome.ended += 1 }
                await scene.awaitViolations(violations + UInt64(outcome.ended))
                for message in seen {
                    let names = Attacker.partitions(in: message)
                    let bytes = message.encoded
                    if plaintexts.contains(where: { bytes.firstRange(of: $0) != nil }) {
                        outcome.leaked.append("plaintext in \(Attacker.describe(message))")
                    } else if case .chunk(let chunk)? = Attacker.blobMessage(message), names.contains(own) || names.contains(conversation) {
                        if chunk.isAvailable { outcome.leaked.append(Attacker.describe(message)) } else { outcome.notHere += 1 }
                    } else if names.contains(own) {
                        outcome.leaked.append(Attacker.describe(message))
                    } else if case .ops(let batch)? = Attacker.syncMessage(message), batch.partition == conversation {
                        outcome.carried += batch.ops.count
                    }
                }
            }
            return outcome
        }
        let latencies = try await scene.honestLatencies(until: done)
        let outcome = await attack.value
        let doctor = await scene.report("WANT for unreadable partitions", latencies: latencies, before: before)

        print(
            "AbuseProcessTests [WANT for unreadable partitions]: \(outcome.links) links, \(outcome.ended) dropped, "
                + "\(outcome.notHere) 'not here' blob answers, \(outcome.carried) conversation ops carried as ciphertext, "
                + "\(outcome.leaked.count) leaks")
        #expect(outcome.leaked.isEmpty, "the victim sent what the reader may not read: \(outcome.leaked.prefix(3))")
        #expect(outcome.notHere >= 3, "BLOB_WANTs for private partitions were not answered 'not here'")
        #expect(outcome.links == 3, "the reader linked \(outcome.links) times; three violations should ban it")
        #expect(outcome.ended == outcome.links, "a link that asked for `self` stayed up")
        let admission = try #require(doctor?.admission)
        #expect(admission.bannedPeers.contains(reader.id.text), "the reader is not banned")
        #expect(admission.bannedHosts.contains("127.0.0.12"), "the reader's address is not banned")
        #expect(scene.victimLog.contains("which was not offered to it"))
    }

    // MARK: 6. Enormous SUMMARY and VECTOR pages

    /// The multi-process variant of `SyncAbuseTests`: an authenticated peer sends the largest
    /// SUMMARY and VECTOR pages the protocol allows, wave after wave. They are valid, so it
    /// keeps its link; nothing of them is stored, and the honest pair keeps talking.
    @Test func enormousSummariesAndVectors_storeNothing_andTheHonestPairKeepsTalking() async throws {
        let cluster = NodeCluster(slot: 23)
        defer { cluster.shutdown() }
        let scene = try await AbuseScene(cluster)
        let before = scene.memory()
        let lobbyOpsBefore = try scene.victim.withStore { try $0.log.opCount(lobby.id) }
        let done = Flag()
        let (port, victimID) = (scene.port, scene.victimID)
        let attack = Task { () -> (waves: Int, linked: Bool) in
            defer { done.set() }
            guard
                let attacker = try? await Attacker.handshake(
                    with: victimID, at: "127.0.0.1", port: port, from: "127.0.0.13", as: Fixtures.identity(204)),
                (try? await attacker.linkAndOffer([lobby])) != nil
            else { return (0, false) }
            defer { attacker.close() }
            var random = SeededRandom(seed: 10)
            var waves = 0
            // 12 waves of 2 full SUMMARY pages (4,096 entries) and 2 full VECTOR pages
            // (1,024 heads): about 8 MB in all.
            for _ in 0..<12 {
                let frames = SyncAbuseTests.wave(&random).map { Attacker.link([$0.type] + $0.payload) }
                guard (try? await attacker.sendRaw(frames.flatMap { (try? attacker.frame($0)) ?? [] })) != nil else { break }
                waves += 1
                // Read what the victim answers (its WANTs for the made-up heads), as a peer would.
                if case .closed = await attacker.next(deadline: .now + .milliseconds(200)) { break }
            }
            let (_, endedAt) = await attacker.drain(until: .now + .milliseconds(500))
            return (waves, endedAt == nil)
        }
        let latencies = try await scene.honestLatencies(until: done)
        let (waves, stillLinked) = await attack.value
        _ = await scene.report("enormous SUMMARY/VECTOR", latencies: latencies, before: before)

        let lobbyOps = try scene.victim.withStore { try $0.log.opCount(lobby.id) }
        print("AbuseProcessTests [enormous SUMMARY/VECTOR]: \(waves) waves of 4 full pages sent, link kept: \(stillLinked)")
        #expect(waves == 12, "the victim closed a link that sent valid pages")
        #expect(stillLinked, "the victim closed a link that sent valid pages")
        #expect(lobbyOps == lobbyOpsBefore + latencies.samples.count, "ops other than the honest ones were stored")
    }
}
