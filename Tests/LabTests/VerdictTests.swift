import TestSupport
import Testing
import Wire

@testable import Lab

@Suite struct StatisticsTests {
    @Test func percentile_nearestRank() {
        let values = (1...100).map(Double.init).shuffled()
        #expect(Statistics.percentile(50, of: values) == 50)
        #expect(Statistics.percentile(95, of: values) == 95)
        #expect(Statistics.percentile(99, of: values) == 99)
        #expect(Statistics.percentile(100, of: values) == 100)
        #expect(Statistics.percentile(0, of: values) == 1)
        #expect(Statistics.percentile(50, of: [7]) == 7)
        #expect(Statistics.percentile(99, of: [3, 1, 2]) == 3)
        #expect(Statistics.percentile(50, of: []) == nil)
    }

    @Test func histogram_putsValuesInTheirBuckets() {
        let bounds = Statistics.latencyBounds(upTo: 100)
        #expect(bounds == [1, 2, 5, 10, 20, 50, 100])
        #expect(Statistics.histogram([0.5, 1, 1.5, 4.9, 99, 100, 5000], bounds: bounds) == [1, 2, 1, 0, 0, 0, 1, 2])
    }
}

@Suite struct VerdictTests {
    static func write(_ id: String, partition: String = "room", node: Int, at: UInt64 = 1_000) -> AcknowledgedWrite {
        AcknowledgedWrite(partition: partition, author: "a\(node)", seq: 1, id: id, node: node, kind: "post", sentAtMillis: at)
    }

    @Test func evaluate_everyWriteEverywhere_nothingLost_latenciesFromOtherNodes() {
        let writes = [Self.write("x", node: 0), Self.write("y", node: 1, at: 2_000)]
        let verdict = DeliveryVerdict.evaluate(
            writes: writes, nodes: 3, startMillis: 0, seconds: 5, holders: { _ in [0, 1, 2] },
            applied: { node, write in write.sentAtMillis + (node == write.node ? 0 : UInt64(10 * (node + 1))) })
        #expect(verdict.lost.isEmpty)
        #expect(verdict.deliveries == 4)
        #expect(verdict.latenciesMillis.sorted() == [10, 20, 30, 30])
        #expect(verdict.deliveredPerSecond == [[0, 0, 1, 0, 0], [0, 1, 0, 0, 0], [0, 1, 1, 0, 0]])
    }

    @Test func evaluate_aWriteMissingOnAHolder_isLost_butNotOnANonHolder() {
        let writes = [Self.write("x", node: 0), Self.write("c", partition: "conversation", node: 0)]
        let verdict = DeliveryVerdict.evaluate(
            writes: writes, nodes: 3, startMillis: 0, seconds: 2,
            holders: { $0 == "conversation" ? [0, 1] : [0, 1, 2] },
            applied: { node, write in node == 2 ? nil : write.sentAtMillis })
        #expect(verdict.lost.count == 1)
        #expect(verdict.lost.first?.write.id == "x")
        #expect(verdict.lost.first?.missingOn == [2])
    }

    @Test func evaluate_aMemberAddedLater_getsOlderWritesAsHistory_notAsLatency() {
        let writes = [Self.write("old", partition: "conversation", node: 0, at: 1_000), Self.write("new", partition: "conversation", node: 0, at: 5_000)]
        let verdict = DeliveryVerdict.evaluate(
            writes: writes, nodes: 2, startMillis: 0, seconds: 10, holders: { _ in [0, 1] },
            holderSince: { node, _ in node == 1 ? 4_000 : 0 }, applied: { _, write in write.sentAtMillis == 1_000 ? 8_000 : 5_050 })
        #expect(verdict.lost.isEmpty && verdict.deliveries == 2)
        #expect(verdict.latenciesMillis == [50])
    }

    @Test func divergedPartitions_comparesOnlyHolders() {
        let digests = [["r": "A", "c": "C1"], ["r": "A", "c": "C1"], ["r": "A", "c": "other"]]
        #expect(divergedPartitions(digests: digests, partitions: ["r", "c"]) { $0 == "c" ? [0, 1] : [0, 1, 2] }.isEmpty)
        #expect(divergedPartitions(digests: digests, partitions: ["r", "c"]) { _ in [0, 1, 2] } == ["c"])
        #expect(divergedPartitions(digests: [["r": "A"], [:]], partitions: ["r"]) { _ in [0, 1] } == ["r"])
    }

    @Test func realMillis_takesOutTheSkewOfTheProcessThatWroteIt() {
        // Started at 1,000 without skew, restarted at 5,000 three minutes behind; now 9,000.
        let history: [(fromMillis: UInt64, skew: Int64)] = [(0, 0), (1_000, 0), (5_000, -180_000)]
        #expect(LabNode.realMillis(fromStored: 3_000, history: history, now: 9_000) == 3_000)
        #expect(LabNode.realMillis(fromStored: 6_000 &- 180_000, history: history, now: 9_000) == 6_000)
        let ahead: [(fromMillis: UInt64, skew: Int64)] = [(0, 0), (5_000, 120_000)]
        #expect(LabNode.realMillis(fromStored: 126_000, history: ahead, now: 9_000) == 6_000)
        #expect(LabNode.realMillis(fromStored: 4_000, history: ahead, now: 9_000) == 4_000)
    }
}

@Suite struct WorkloadTests {
    static let rooms = [Workload.Room(name: "a", partition: "PA"), Workload.Room(name: "b", partition: "PB")]

    /// Runs `count` steps, acknowledging each write with a made-up id.
    static func run(seed: UInt64, count: Int) -> (requests: [String], workload: Workload) {
        var workload = Workload(rooms: rooms)
        var random = SeededRandom(seed: seed)
        workload.acknowledged(Workload.createConversation(by: 0, members: [1, 2], name: "c"), by: 0, id: "create", partition: "PC")
        var requests: [String] = []
        for step in 0..<count {
            guard let (node, request) = workload.next(available: [0, 1, 2, 3], nodes: 4, random: &random) else { continue }
            let partition = request.room.map { $0 == "a" ? "PA" : "PB" } ?? request.conversation ?? "?"
            workload.acknowledged(request, by: node, id: "op\(step)", partition: partition)
            requests.append("\(node) \(request.kind) \(request.room ?? request.conversation ?? "") \(request.target ?? "") \(request.member ?? "")")
        }
        return (requests, workload)
    }

    @Test func sameSeed_sameWrites() {
        let seed = SeededRandom.announce("WorkloadTests.sameSeed_sameWrites")
        #expect(Self.run(seed: seed, count: 300).requests == Self.run(seed: seed, count: 300).requests)
        #expect(Self.run(seed: seed, count: 300).requests != Self.run(seed: seed &+ 1, count: 300).requests)
    }

    @Test func mix_coversEveryKind_andEditsOnlyOwnPosts() throws {
        let seed = SeededRandom.announce("WorkloadTests.mix_coversEveryKind")
        let (requests, workload) = Self.run(seed: seed, count: 2_000)
        let kinds = Set(requests.map { $0.split(separator: " ")[1] })
        #expect(kinds.isSuperset(of: ["post", "edit", "delete", "react", "task-add", "task-set"]))
        #expect(kinds.contains("member-add") || kinds.contains("member-remove"))
        let conversation = try #require(workload.conversations.first)
        #expect(conversation.creator == 0)
        #expect(conversation.members.isSubset(of: conversation.everMembers))
        #expect(workload.holders(of: "PC", nodes: 4) == conversation.everMembers)
        #expect(workload.holders(of: "PA", nodes: 4) == [0, 1, 2, 3])
        #expect(conversation.everMembers.allSatisfy { conversation.memberSince[$0] != nil })
    }

    @Test func resolve_replacesNodePlaceholdersByIds() {
        let request = Workload.createConversation(by: 0, members: [1, 2], name: "x")
        #expect(Workload.resolve(request, ids: ["i0", "i1", "i2"]).members == ["i1", "i2"])
    }

    @Test func noAvailableNode_noWrite() {
        var workload = Workload(rooms: Self.rooms)
        var random = SeededRandom(seed: 1)
        #expect(workload.next(available: [], nodes: 4, random: &random) == nil)
    }
}
