import Foundation
import Replica
import SQLite
import Store
import TestSupport
import Testing

extension NodeProcessTests {
    /// Sync between real `parley run` processes on loopback (docs/DESIGN.md §4.3, §8): convergence under
    /// concurrent writes, catch-up after a stop and after `kill -9`, a split and its heal.
    /// Each test prints the figures it measured.
    @Suite struct Sync {
        /// What one node does in the five-node test: 200 posts, with edits, deletes, reactions
        /// (to the newest message, anyone's) and tasks in between. Returns the ops it wrote.
        static func workload(_ node: TestNode, messages: Int) async -> Int {
            var ops = 0
            var mine: [String] = []
            func run(_ arguments: [String]) async -> String? {
                let result = await node.parley(arguments)
                #expect(result.exitCode == 0, "\(result)")
                guard result.exitCode == 0 else { return nil }
                ops += 1
                return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            for index in 0..<messages {
                if let id = await run(["send", "--room", "lobby", "\(node.name) says \(index)"]) { mine.append(id) }
                if index % 20 == 19, mine.count > 3 { _ = await run(["edit", mine[mine.count - 4], "\(node.name) edited \(index)"]) }
                if index % 40 == 39, mine.count > 5 { _ = await run(["delete", mine[mine.count - 6]]) }
                if index % 25 == 24 {
                    let newest = await node.json(["history", "--room", "lobby", "--limit", "1", "--json"]).first
                    if let id = newest?["id"] as? String, newest?["deleted"] as? Bool == false { _ = await run(["react", id, "👍"]) }
                }
                if index % 50 == 49, let task = await run(["task", "add", "--room", "lobby", "\(node.name) task \(index)"]) {
                    _ = await run(["task", "set", task, "--status", "in-progress"])
                }
            }
            return ops
        }

        @Test func fiveNodes_post200EachConcurrently_withEditsDeletesReactionsAndTasks_andConverge() async throws {
            let cluster = NodeCluster(slot: 10)
            defer { cluster.shutdown() }
            var nodes: [TestNode] = []
            for index in 1...5 { nodes.append(try await cluster.node("n\(index)")) }
            for node in nodes { try await node.start(cluster.loopbackArguments + syncTiming) }
            try #require(await poll(timeout: .seconds(10)) { await allLinked(nodes) }, "\(cluster.logs)")
            // The directory (five nicks) first, so the histories name every author.
            try #require(await poll(timeout: .seconds(10)) { await sameDigests(nodes) }, "\(cluster.logs)")

            let start = ContinuousClock.now
            let written = await withTaskGroup(of: Int.self) { group in
                for node in nodes { group.addTask { await Self.workload(node, messages: 200) } }
                return await group.reduce(0, +)
            }
            let posted = millis(since: start)
            let converged = await poll(timeout: .seconds(30), interval: .milliseconds(200)) {
                for node in nodes where await node.lobbyOps() != written { return false }
                return await sameDigests(nodes)
            }
            let lag = millis(since: start) - posted
            let counts = await nodes.asyncMap { await $0.lobbyOps() }
            #expect(converged, "not converged: \(counts) of \(written)\n\(cluster.logs)")
            let histories = await nodes.asyncMap { await $0.lobbyHistory() }
            #expect(Set(histories).count == 1, "the histories differ")
            let history = try JSONSerialization.jsonObject(with: Data(histories[0].utf8)) as? [[String: Any]] ?? []
            #expect(history.count == 1_000)
            #expect(history.contains { $0["edited"] as? Bool == true } && history.contains { $0["deleted"] as? Bool == true })
            #expect(history.contains { ($0["reactions"] as? [String: Any])?.isEmpty == false })
            let tasks = await nodes[4].json(["tasks", "--room", "lobby", "--json"])
            #expect(tasks.count == 20 && tasks.allSatisfy { $0["status"] as? String == "in-progress" })
            let received = await nodes.asyncMap { await $0.syncStatus()?["ops_received"] as? Int ?? 0 }.reduce(0, +)
            print(
                "measured: five nodes wrote 1,000 messages and \(written - 1_000) other ops concurrently in \(posted) ms; "
                    + "every replica equal \(lag) ms after the last write; each op arrived \(Double(received * 10 / (written * 4)) / 10) "
                    + "times per receiving node (live push reaches a node from every peer that holds it)")
        }

        @Test func aStoppedNode_catchesUp_aKill9MidFetch_losesNothing_andOfflineWritesAreDelivered() async throws {
            let cluster = NodeCluster(slot: 11)
            defer { cluster.shutdown() }
            let a = try await cluster.node("a"), b = try await cluster.node("b"), c = try await cluster.node("c")
            for node in [a, b, c] { try await node.start(cluster.loopbackArguments + syncTiming) }
            try #require(await poll(timeout: .seconds(10)) { await allLinked([a, b, c]) }, "\(cluster.logs)")
            await c.stop()

            // Written while no node runs for c: delivered once it starts.
            #expect(await c.parley(["send", "--room", "lobby", "written offline"]).exitCode == 0)
            async let fromA: Void = a.postDirectly(500, "a")
            async let fromB: Void = b.postDirectly(500, "b")
            _ = try await (fromA, fromB)
            try #require(await poll(timeout: .seconds(20)) { await sameDigests([a, b]) }, "\(cluster.logs)")
            let total = await a.lobbyOps()
            #expect(total == 1_000)

            // One op per WANT: the fetch takes a thousand round trips, long enough to watch and to cut.
            try await c.start(cluster.loopbackArguments + syncTiming + ["--sync-credit", "1"])
            var progress: (fetched: Int, wanted: Int)?
            let watched = await poll(timeout: .seconds(20), interval: .milliseconds(1)) {
                guard let sync = await c.syncStatus(), let fetched = sync["fetched"] as? Int, let wanted = sync["wanted"] as? Int else { return false }
                if fetched > 0, fetched < wanted { progress = (fetched, wanted) }
                return progress != nil || fetched >= total
            }
            try #require(watched, "\(cluster.logs)")
            let seen = try #require(progress, "the fetch ended before status showed it under way")
            #expect(seen.wanted >= total, "status counts every missing op as wanted: \(seen)")
            // The two peers are frozen while c's stored ops are listed, so the fetch stands still
            // until the kill: a fast build would otherwise finish it while `history` runs.
            a.kill(SIGSTOP)
            b.kill(SIGSTOP)
            let stored = Set(await c.json(["history", "--room", "lobby", "--json"]).compactMap { $0["id"] as? String })
            c.kill()
            a.kill(SIGCONT)
            b.kill(SIGCONT)
            #expect(stored.count < total + 1, "the fetch was under way when the node was killed")

            // The store is whole, and holds every op it held before the kill.
            let integrity: String? = try c.withStore { store in try store.database.scalar("PRAGMA integrity_check") }
            #expect(integrity == "ok")
            let afterKill = await c.json(["history", "--room", "lobby", "--json"]).compactMap { $0["id"] as? String }
            #expect(stored.isSubset(of: Set(afterKill)), "ops stored before kill -9 are gone")
            #expect(await c.parley(["digest"]).exitCode == 0)

            let restart = ContinuousClock.now
            let left = total + 1 - afterKill.count
            try await c.start(cluster.loopbackArguments + syncTiming)
            let caughtUp = await poll(timeout: .seconds(20), interval: .milliseconds(50)) { await sameDigests([a, b, c]) }
            let catchUp = millis(since: restart)
            #expect(caughtUp, "\(cluster.logs)")
            #expect(await a.lobbyOps() == total + 1, "the offline message reached the others")
            #expect(await a.lobbyHistory().contains("written offline"))
            #expect(c.process?.stderr.contains("fetching: ") == true || left < 100, "long fetches are logged")
            let received = await c.syncStatus()?["ops_received"] as? Int ?? 0
            #expect(received == left, "two peers offer the same ops; each arrives once\n\(c.process?.stderr ?? "")")
            print(
                "measured: after kill -9 at \(seen.fetched) / \(seen.wanted), the restarted node fetched the \(left) ops left "
                    + "in \(catchUp) ms (process start included), "
                    + "receiving \(received) ops from its two peers")
        }

        @Test func sixNodes_splitInTwoGroups_keepPosting_andConvergeAfterTheyRejoin() async throws {
            let cluster = NodeCluster(slot: 12)
            defer { cluster.shutdown() }
            var nodes: [TestNode] = []
            for index in 1...6 { nodes.append(try await cluster.node("p\(index)")) }
            let groups = [Array(nodes[0..<3]), Array(nodes[3..<6])]
            let base = ["--listen", "127.0.0.1:0", "--no-discovery"] + syncTiming
            // Each group knows only itself: every node lists the members started before it.
            for group in groups {
                for (index, node) in group.enumerated() {
                    let peers = index == 0 ? [] : ["--peers", try await node.writePeersFile(Array(group[..<index]), in: cluster.root)]
                    try await node.start(base + peers)
                }
            }
            for group in groups { try #require(await poll(timeout: .seconds(10)) { await allLinked(group) }, "\(cluster.logs)") }

            await withTaskGroup(of: Void.self) { tasks in
                for node in nodes { tasks.addTask { _ = await node.post(20, "\(node.name) split") } }
            }
            for group in groups {
                #expect(await poll(timeout: .seconds(20)) { await sameDigests(group) }, "\(cluster.logs)")
            }
            #expect(await groups[0][0].sharedDigests() != groups[1][0].sharedDigests())
            #expect(await groups[0][0].lobbyOps() == 60)
            #expect(await groups[1][0].lobbyOps() == 60)

            // The heal: group B restarts with a joint peers file (all the others, as they listen now).
            let heal = ContinuousClock.now
            for node in groups[1] {
                let peersFile = try await node.writePeersFile(nodes.filter { $0 !== node && $0.process?.isRunning == true }, in: cluster.root)
                await node.stop()
                try await node.start(base + ["--peers", peersFile])
            }
            await withTaskGroup(of: Void.self) { tasks in
                for node in [nodes[0], nodes[5]] { tasks.addTask { _ = await node.post(5, "\(node.name) healed") } }
            }
            let converged = await poll(timeout: .seconds(30), interval: .milliseconds(200)) {
                for node in nodes where await node.lobbyOps() != 130 { return false }
                return await sameDigests(nodes)
            }
            let counts = await nodes.asyncMap { await $0.lobbyOps() }
            #expect(converged, "\(counts)\n\(cluster.logs)")
            #expect(Set(await nodes.asyncMap { await $0.lobbyHistory() }).count == 1)
            print(
                "measured: two groups of three, 60 ops apart each way, equal \(millis(since: heal)) ms after the heal began "
                    + "(three restarts included)")
        }

        @Test func syncCost_inSyncOn10000Ops_onlySummaries_andBehindBy1000_receivesExactly1000() async throws {
            let cluster = NodeCluster(slot: 13)
            defer { cluster.shutdown() }
            let x = try await cluster.node("x"), y = try await cluster.node("y")
            var factory = OpFactory()
            let authors = (0..<10).map { Fixtures.identity(UInt8(80 + $0)) }
            var ops: [Replica.Operation] = []
            for round in 0..<1_000 {
                for author in authors { ops.append(factory.make(post("\(author.id.short) \(round)"), in: lobby.id, by: author)) }
            }
            let opBytes = ops.reduce(0) { $0 + $1.encoded.count }
            for node in [x, y] {
                try node.withStore { store in
                    for start in stride(from: 0, to: ops.count, by: 1_000) {
                        let outcomes = try store.apply(Array(ops[start..<start + 1_000]), nowMillis: Fixtures.now())
                        #expect(outcomes.allSatisfy { $0 == .applied })
                    }
                }
            }
            // Both also hold the other's profile, so the directory is in sync as well.
            let profiles = try [x, y].map { node in try node.withStore { try $0.log.allOps(in: PartitionDescriptor.directory.id) } }
            // The profiles were written at the wall clock's time: applied at it (not the fixtures' day,
            // which they are months ahead of, and would wait for).
            let wall = UInt64(Date().timeIntervalSince1970 * 1000)
            try x.withStore { _ = try $0.apply(profiles[1], nowMillis: wall) }
            try y.withStore { _ = try $0.apply(profiles[0], nowMillis: wall) }

            let base = ["--listen", "127.0.0.1:0", "--no-discovery"] + NodeCluster.fastTiming
            try await x.start(base)
            try await y.start(base + ["--peers", try await y.writePeersFile([x], in: cluster.root)])
            try #require(await poll(timeout: .seconds(10)) { await allLinked([x, y]) }, "\(cluster.logs)")
            // Wait until each side has received the other's HELLO and SUMMARY (two frames), then
            // read the link's counters on both ends.
            let summariesCrossed = await poll(timeout: .seconds(10)) {
                for node in [x, y] {
                    let peer = (await node.syncStatus()?["peers"] as? [[String: Any]])?.first
                    guard let frames = peer?["frames_received"] as? Int, frames >= 2 else { return false }
                }
                return true
            }
            try #require(summariesCrossed, "\(cluster.logs)")
            var exchanged = 0
            for node in [x, y] {
                let sync = try #require(await node.syncStatus())
                let peer = try #require((sync["peers"] as? [[String: Any]])?.first)
                #expect(sync["ops_received"] as? Int == 0 && sync["fetched"] as? Int == 0, "\(sync)")
                exchanged += (peer["bytes_sent"] as? Int ?? 0)
            }
            #expect(exchanged > 0 && exchanged < opBytes / 1_000, "\(exchanged) bytes for \(opBytes) bytes of ops")

            // x gets 1,000 more ops while y is away; y, back, receives exactly those.
            await y.stop()
            let more = (0..<100).flatMap { round in authors.map { factory.make(post("\($0.id.short) more \(round)"), in: lobby.id, by: $0) } }
            try x.withStore { _ = try $0.apply(more, nowMillis: Fixtures.now()) }
            // x takes note now (as after a command's poke), not while y links: else it would push
            // some of them live while y fetches them, and y would receive those twice.
            #expect(await x.poke() != nil)
            let restart = ContinuousClock.now
            try await y.start(base + ["--peers", try await y.writePeersFile([x], in: cluster.root)])
            let caughtUp = await poll(timeout: .seconds(20), interval: .milliseconds(20)) { await sameDigests([x, y]) }
            let catchUp = millis(since: restart)
            #expect(caughtUp, "\(cluster.logs)")
            let sync = try #require(await y.syncStatus())
            #expect(sync["ops_received"] as? Int == 1_000 && sync["fetched"] as? Int == 1_000 && sync["wanted"] as? Int == 1_000, "\(sync)")
            print(
                "measured: in sync on \(ops.count) ops (\(opBytes) bytes), the link carried \(exchanged) bytes in "
                    + "300 ms (summaries and pings); behind by 1,000 ops: received exactly 1,000, equal \(catchUp) ms after "
                    + "`parley run` was started")
        }
    }
}

extension Array {
    /// `transform` applied to each element in order, awaiting each.
    func asyncMap<T>(_ transform: (Element) async -> T) async -> [T] {
        var result: [T] = []
        for element in self { result.append(await transform(element)) }
        return result
    }
}
