import Foundation
import Identity
import Replica
import Store
import TestSupport
import Testing

extension NodeProcessTests {
    /// Room policies and the room directory between real `parley run` processes on loopback
    /// (docs/DESIGN.md §3.4 *Room policies*, §4.3.1 ROOMS).
    @Suite struct RoomDirectory {
        /// The rows of `rooms --all --json` by name.
        static func directory(_ node: TestNode) async -> [String: [String: Any]] {
            var rooms: [String: [String: Any]] = [:]
            for row in await node.json(["rooms", "--all", "--json"]) {
                if let name = row["name"] as? String { rooms[name] = row }
            }
            return rooms
        }

        @Test func roomsJoinedOnPeers_areListedWithTopicAndPeople_andJoiningFromTheListSyncs() async throws {
            let cluster = NodeCluster(slot: 9)
            defer { cluster.shutdown() }
            let a = try await cluster.node("a"), b = try await cluster.node("b"), c = try await cluster.node("c")
            // b creates #ops with a topic (b owns it); c joins it and #dev; a joins nothing.
            #expect(await b.parley(["join", "ops", "--topic", "on-call hand-over", "--retention", "30d"]).exitCode == 0)
            #expect(await b.parley(["send", "--room", "ops", "b was here"]).exitCode == 0)
            #expect(await c.parley(["join", "ops"]).exitCode == 0)
            #expect(await c.parley(["join", "dev", "--topic", "builds"]).exitCode == 0)
            for node in [a, b, c] { try await node.start(cluster.loopbackArguments + syncTiming) }
            try #require(await poll(timeout: .seconds(10)) { await allLinked([a, b, c]) }, "\(cluster.logs)")
            #expect(await c.parley(["send", "--room", "ops", "c too"]).exitCode == 0)

            let start = ContinuousClock.now
            let listed = await poll(timeout: .seconds(20), interval: .milliseconds(200)) {
                let rooms = await Self.directory(a)
                return rooms["ops"]?["topic"] as? String == "on-call hand-over" && rooms["ops"]?["people"] as? Int == 2
                    && rooms["dev"]?["topic"] as? String == "builds"
            }
            let rooms = await Self.directory(a)
            #expect(listed, "a's directory: \(rooms)\n\(cluster.logs)")
            print("measured: rooms joined on two peers listed on a third \(millis(since: start)) ms after the links were up")
            #expect(rooms["ops"]?["joined"] as? Bool == false && rooms["dev"]?["people"] as? Int == 1)
            // Only rooms someone holds (`init` joins everyone to #lobby), and no other partition
            // (the directory, self, conversations).
            #expect(Set(rooms.keys) == ["ops", "dev", "lobby"], "\(rooms)")
            #expect(rooms["lobby"]?["joined"] as? Bool == true)
            let text = await a.parley(["rooms", "--all"]).stdout
            #expect(text.contains("#ops") && text.contains("2 people") && text.contains("on-call hand-over"), "\(text)")

            // A non-owner's policy op (written past the CLI, which refuses it) changes nothing.
            let refused = await c.parley(["room", "set", "ops", "--topic", "taken over"])
            #expect(refused.exitCode == 1 && refused.stderr.contains("owner"), "\(String(describing: refused))")
            let cIdentity = try KeyFile.load(at: c.dataDir + "/identity.key")
            let ops = PartitionDescriptor.room(RoomName("ops")!).id
            try c.withStore { store in
                let now = UInt64(Date().timeIntervalSince1970 * 1_000)
                try store.author(.roomPolicy(RoomPolicy(topic: "taken over")), in: ops, by: cIdentity, nowMillis: now)
            }
            _ = await c.poke()

            // Joining from the list fetches the room's own ops, c's policy op among them.
            #expect(await a.parley(["join", "ops"]).exitCode == 0)
            let synced = await poll(timeout: .seconds(20), interval: .milliseconds(200)) {
                await sameDigests([a, b, c], rooms: ["ops"])
            }
            #expect(synced, "\(cluster.logs)")
            let history = await a.json(["history", "--room", "ops", "--json"]).compactMap { $0["text"] as? String }
            #expect(history == ["b was here", "c too"], "\(history)")
            for node in [a, b, c] {
                let mine = await node.json(["rooms", "--json"]).first { $0["name"] as? String == "ops" }
                #expect(mine?["topic"] as? String == "on-call hand-over", "\(node.name): \(mine ?? [:])")
                #expect(mine?["owner"] as? String == b.id && mine?["retention"] as? String == "30d")
            }
        }
    }
}

extension NodeProcessTests.RoomDirectory {
    /// Which of `words` the node's database files hold, as raw bytes (the node still running).
    static func wordsOnDisk(_ words: [String], in node: TestNode) -> [String] {
        let files = ["parley.db", "parley.db-wal"].compactMap { FileManager.default.contents(atPath: node.dataDir + "/" + $0) }
        return words.filter { word in files.contains { $0.range(of: Data(word.utf8)) != nil } }
    }

    @Test func keepTheLast5_onThreeNodes_leavesTheSame5Messages_equalDigests_andNoDroppedWordOnDisk() async throws {
        let cluster = NodeCluster(slot: 9)
        defer { cluster.shutdown() }
        let a = try await cluster.node("a"), b = try await cluster.node("b"), c = try await cluster.node("c")
        #expect(await a.parley(["join", "keep", "--retention", "5m"]).exitCode == 0)
        for node in [b, c] { #expect(await node.parley(["join", "keep"]).exitCode == 0) }
        for node in [a, b, c] { try await node.start(cluster.loopbackArguments + syncTiming) }
        try #require(await poll(timeout: .seconds(10)) { await allLinked([a, b, c]) }, "\(cluster.logs)")
        try #require(await poll(timeout: .seconds(10)) { await sameDigests([a, b, c], rooms: ["keep"]) }, "\(cluster.logs)")

        // Twelve messages, four from each node, interleaved.
        var words: [String] = []
        for round in 0..<4 {
            for node in [a, b, c] {
                let word = "kept-or-dropped-\(node.name)-\(round)-\(UInt64.random(in: 1...UInt64.max))"
                words.append(word)
                #expect(await node.parley(["send", "--room", "keep", word]).exitCode == 0)
            }
        }
        let start = ContinuousClock.now
        let converged = await poll(timeout: .seconds(30), interval: .milliseconds(200)) {
            guard await sameDigests([a, b, c], rooms: ["keep"]) else { return false }
            var histories: Set<String> = []
            for node in [a, b, c] { histories.insert(await node.parley(["history", "--room", "keep", "--json"]).stdout) }
            guard histories.count == 1 else { return false }
            return await a.json(["history", "--room", "keep", "--json"]).count == 5
        }
        #expect(converged, "\(cluster.logs)")
        print("measured: three replicas kept the same last 5 of 12 messages \(millis(since: start)) ms after the last write")
        let kept = await a.json(["history", "--room", "keep", "--json"]).compactMap { $0["text"] as? String }
        #expect(kept == Array(words.suffix(5)), "\(kept)")
        // Every header stays: 12 posts and the policy op, everywhere.
        for node in [a, b, c] {
            let row = await node.json(["digest", "--json"]).first { $0["name"] as? String == "keep" }
            #expect(row?["ops"] as? Int == 13, "\(node.name): \(row ?? [:])")
        }
        let dropped = Array(words.prefix(7))
        for node in [a, b, c] {
            let left = await poll(timeout: .seconds(10)) { Self.wordsOnDisk(dropped, in: node).isEmpty }
            #expect(left, "\(node.name) still holds \(Self.wordsOnDisk(dropped, in: node))")
            #expect(Self.wordsOnDisk(kept, in: node).count == 5, "the files are read as they are")
        }

        // A node that joins now fetches the dropped ones as headers alone, checks them against
        // its own view of the window, and never holds their words.
        let d = try await cluster.node("d")
        #expect(await d.parley(["join", "keep"]).exitCode == 0)
        try await d.start(cluster.loopbackArguments + syncTiming)
        let caughtUp = await poll(timeout: .seconds(30), interval: .milliseconds(200)) {
            await sameDigests([a, d], rooms: ["keep"])
        }
        #expect(caughtUp, "\(cluster.logs)")
        #expect(await d.json(["history", "--room", "keep", "--json"]).compactMap { $0["text"] as? String } == kept)
        #expect(Self.wordsOnDisk(dropped, in: d).isEmpty)
    }
}
