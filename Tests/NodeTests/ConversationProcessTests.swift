import Foundation
import TestSupport
import Testing

extension NodeProcessTests {
    /// Private conversations between real `parley run` processes (issue 6, docs/DESIGN.md §3.5): members
    /// converse, a node that is not a member carries the ciphertext and reads nothing, a removed
    /// member reads nothing written after its removal, a member added while offline gets the
    /// conversation from a carrier after the creator has gone, images arrive byte-identical, and
    /// unread counts are exact.
    @Suite struct Conversations {
        /// Every file of a node's store (the database and its write-ahead log), as one blob.
        static func storeBytes(_ node: TestNode) -> Data {
            ["/parley.db", "/parley.db-wal"].reduce(into: Data()) { all, name in
                if let data = FileManager.default.contents(atPath: node.dataDir + name) { all.append(data) }
            }
        }

        /// The `digest --json` row of `partition` on `node`, as "ops digest" (nil if it holds none).
        static func digest(_ node: TestNode, _ partition: String) async -> String? {
            guard let row = await node.json(["digest", "--json"]).first(where: { $0["partition"] as? String == partition }) else { return nil }
            return "\(row["ops"] ?? "") \(row["digest"] ?? "")"
        }

        /// The texts of `history --conversation ID --json` on `node`.
        static func texts(_ node: TestNode, _ conversation: String) async -> [String] {
            await node.json(["history", "--conversation", conversation, "--json"]).compactMap { $0["text"] as? String }
        }

        /// Starts `carrier`, then `ends` with `carrier` as their only peer (static, no discovery),
        /// so everything between them goes through it; returns once it is linked to them all.
        static func startLinkedThrough(_ carrier: TestNode, _ ends: [TestNode], in cluster: NodeCluster) async throws {
            try await carrier.start(["--listen", "127.0.0.1:0", "--no-discovery"] + syncTiming)
            for node in ends {
                let peers = try await node.writePeersFile([carrier], in: cluster.root)
                try await node.start(["--listen", "127.0.0.1:0", "--no-discovery", "--peers", peers] + syncTiming)
            }
            try #require(await poll(timeout: .seconds(15)) { await carrier.lists(ends, as: "linked") }, "\(cluster.logs)")
        }

        /// Runs a command that must succeed; returns its trimmed standard output.
        @discardableResult
        static func run(_ node: TestNode, _ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) async -> String {
            let result = await node.parley(arguments)
            #expect(result.exitCode == 0, "\(node.name): \(result)", sourceLocation: sourceLocation)
            return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        /// Random bytes behind a PNG signature: an "image" of `size` bytes.
        static func image(_ size: Int, seed: UInt64) -> [UInt8] {
            var random = SeededRandom(seed: seed)
            return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + (8..<size).map { _ in UInt8.random(in: 0...255, using: &random) }
        }

        @Test func threeMembersConverse_aCarrierReadsNothing_aRemovedMemberMissesLaterMessages_imagesArriveByteIdentical() async throws {
            let seed = SeededRandom.announce("threeMembersConverse")
            let cluster = NodeCluster(slot: 15)
            defer { cluster.shutdown() }
            let alice = try await cluster.node("alice"), bob = try await cluster.node("bob"), carol = try await cluster.node("carol")
            let dave = try await cluster.node("dave")
            let all = [alice, bob, carol, dave]
            for node in all { try await node.start(cluster.loopbackArguments + syncTiming) }
            try #require(await poll(timeout: .seconds(15)) { await allLinked(all) }, "\(cluster.logs)")

            let name = "moonlit heist planning"
            let conversation = await Self.run(alice, ["conversation", "create", "--name", name, "--members", "\(bob.id),\(carol.id)"])
            try #require(conversation.count == 52, "\(cluster.logs)")
            let joined = await poll(timeout: .seconds(15)) {
                for node in [bob, carol] where await node.json(["conversations", "--json"]).first?["name"] as? String != name { return false }
                return true
            }
            try #require(joined, "\(cluster.logs)")

            // Each member writes; alice also sends a photo (1.5 MiB: two credit windows of chunks).
            var secrets: [String] = []
            for node in [alice, bob, carol] {
                let secret = "\(node.name) whispers the vault code \(node.name.count)4\(node.name.count)9"
                await Self.run(node, ["send", "--conversation", conversation, secret])
                secrets.append(secret)
            }
            let photo = Self.image(1_536 * 1_024, seed: seed)
            let photoPath = cluster.root + "/vault-blueprint.png"
            try Data(photo).write(to: URL(fileURLWithPath: photoPath))
            let photoMessage = await Self.run(alice, ["send", "--conversation", conversation, "--attach", photoPath, "the blueprint"])
            secrets.append("the blueprint")
            let roomPhoto = Self.image(8 << 20, seed: seed &+ 1)  // the largest attachment
            let roomPhotoPath = cluster.root + "/lobby-cat.png"
            try Data(roomPhoto).write(to: URL(fileURLWithPath: roomPhotoPath))
            let sentAt = ContinuousClock.now
            let roomMessage = await Self.run(alice, ["send", "--room", "lobby", "--attach", roomPhotoPath, "a cat"])

            let conversed = await poll(timeout: .seconds(20)) {
                for node in [alice, bob, carol] where Set(await Self.texts(node, conversation)) != Set(secrets) { return false }
                return true
            }
            try #require(conversed, "\(cluster.logs)")

            // The photo arrives byte-identical at every member; the lobby's at everyone.
            for node in [bob, carol] {
                let out = cluster.root + "/\(node.name)-photo.png"
                let fetched = await poll(timeout: .seconds(20)) {
                    await node.parley(["attachment", photoMessage, "--out", out, "--force"]).exitCode == 0
                }
                #expect(fetched, "\(node.name) never got the photo\n\(cluster.logs)")
                #expect(FileManager.default.contents(atPath: out).map(Array.init) == photo, "\(node.name)'s photo differs")
            }
            let history = await bob.json(["history", "--conversation", conversation, "--json"])
            let listed = (history.first { $0["id"] as? String == photoMessage }?["attachments"] as? [[String: Any]])?.first
            #expect(listed?["name"] as? String == "vault-blueprint.png" && listed?["size"] as? Int == photo.count)
            #expect(listed?["mime"] as? String == "image/png" && (listed?["hash"] as? String)?.count == 64)
            for node in [bob, carol, dave] {
                let out = cluster.root + "/\(node.name)-cat.png"
                let fetched = await poll(timeout: .seconds(20)) {
                    await node.parley(["attachment", roomMessage, "--out", out, "--force"]).exitCode == 0
                }
                #expect(fetched, "\(node.name) never got the lobby photo\n\(cluster.logs)")
                #expect(FileManager.default.contents(atPath: out).map(Array.init) == roomPhoto)
            }
            let spread = millis(since: sentAt)
            print(
                "measured: an 8 MiB photo posted in the lobby was on three other nodes, checked, within \(spread) ms (\(8_000 / max(spread, 1)) MiB/s per node at least)"
            )

            // dave carries every op of the conversation and reads none of it.
            let carried = await poll(timeout: .seconds(20)) {
                guard let reference = await Self.digest(alice, conversation) else { return false }
                return await Self.digest(dave, conversation) == reference
            }
            #expect(carried, "dave does not carry the conversation\n\(cluster.logs)")
            let daveBytes = Self.storeBytes(dave)
            #expect(!daveBytes.isEmpty)
            for plaintext in secrets + [name, "vault-blueprint.png"] {
                #expect(daveBytes.range(of: Data(plaintext.utf8)) == nil, "dave's store holds \"\(plaintext)\"")
            }
            #expect(daveBytes.range(of: Data(photo[1_000..<1_064])) == nil, "dave's store holds the photo")
            var said = ""
            for arguments in [
                ["history", "--conversation", conversation, "--json"], ["history", "--conversation", conversation],
                ["conversations", "--json"], ["conversations"], ["attachment", photoMessage, "--out", cluster.root + "/dave-photo.png"],
                ["tasks", "--conversation", conversation, "--json"], ["export", "--out", cluster.root + "/dave.parley", "--conversation", conversation],
                ["digest", "--json"], ["people", "--json"], ["status", "--json"], ["rooms", "--json"],
            ] {
                let result = await dave.parley(arguments)
                said += result.stdout + result.stderr
            }
            for plaintext in secrets + [name, "vault-blueprint.png"] { #expect(!said.contains(plaintext), "a command on dave shows \"\(plaintext)\"") }
            #expect(!FileManager.default.fileExists(atPath: cluster.root + "/dave-photo.png"))
            // Nor can dave write there: the command refuses, and no replica gains an op.
            let before = await Self.digest(alice, conversation)
            #expect(await dave.parley(["send", "--conversation", conversation, "let me in"]).exitCode != 0)
            #expect(await dave.parley(["conversation", "add", conversation, dave.id]).exitCode != 0)
            #expect(await Self.digest(dave, conversation) == before)
            #expect(await dave.json(["conversations", "--json"]).allSatisfy { $0["id"] as? String != conversation || $0["name"] as? String == "" })

            // carol is removed: she keeps what came before and reads nothing written after.
            await Self.run(alice, ["conversation", "remove", conversation, carol.id])
            let removed = await poll(timeout: .seconds(15)) {
                await carol.json(["conversations", "--json"]).first { $0["id"] as? String == conversation }?["member"] as? Bool == false
            }
            #expect(removed, "\(cluster.logs)")
            let after = "after carol left: the vault moved to pier 9"
            await Self.run(bob, ["send", "--conversation", conversation, after])
            let delivered = await poll(timeout: .seconds(20)) {
                guard await Self.texts(alice, conversation).contains(after), let reference = await Self.digest(alice, conversation) else { return false }
                let carols = await Self.digest(carol, conversation), daves = await Self.digest(dave, conversation)
                return carols == reference && daves == reference
            }
            #expect(delivered, "the message after the removal did not reach every replica\n\(cluster.logs)")
            let carolReads = await Self.texts(carol, conversation)
            #expect(Set(secrets).isSubset(of: Set(carolReads)), "carol lost what she could read: \(carolReads)")
            #expect(!carolReads.contains(after))
            #expect(Self.storeBytes(carol).range(of: Data(after.utf8)) == nil, "carol's store holds the later message")
            #expect(Self.storeBytes(dave).range(of: Data(after.utf8)) == nil)
        }

        @Test func aMemberAddedWhileOffline_getsTheConversationFromACarrier_afterTheCreatorIsGone() async throws {
            let cluster = NodeCluster(slot: 16)
            defer { cluster.shutdown() }
            let alice = try await cluster.node("alice"), bob = try await cluster.node("bob")
            let dave = try await cluster.node("dave"), erin = try await cluster.node("erin")
            for node in [alice, bob, dave] { try await node.start(cluster.loopbackArguments + syncTiming) }
            try #require(await poll(timeout: .seconds(15)) { await allLinked([alice, bob, dave]) }, "\(cluster.logs)")

            let conversation = await Self.run(alice, ["conversation", "create", "--name", "night shift", "--members", bob.id])
            let early = "bob, bring the thermos"
            await Self.run(alice, ["send", "--conversation", conversation, early])
            #expect(await poll(timeout: .seconds(15)) { await Self.texts(bob, conversation).contains(early) }, "\(cluster.logs)")
            // erin has never run: she is added while offline.
            await Self.run(alice, ["conversation", "add", conversation, erin.id])
            let welcome = "erin, the night shift starts at ten"
            await Self.run(alice, ["send", "--conversation", conversation, welcome])
            // dave, never a member, carries the conversation and erin's inbox with the invite.
            let carried = await poll(timeout: .seconds(20)) {
                let rows = await alice.json(["digest", "--json"]).filter { ["conversation", "inbox"].contains($0["kind"] as? String ?? "") }
                guard rows.count >= 2 else { return false }
                let theirs = await dave.json(["digest", "--json"])
                return rows.allSatisfy { row in
                    theirs.contains { $0["partition"] as? String == row["partition"] as? String && $0["digest"] as? String == row["digest"] as? String }
                }
            }
            try #require(carried, "\(cluster.logs)")
            await alice.stop()
            await bob.stop()

            try await erin.start(cluster.loopbackArguments + syncTiming)
            let learned = await poll(timeout: .seconds(20)) { await Self.texts(erin, conversation).contains(welcome) }
            #expect(learned, "erin did not get the conversation through dave\n\(cluster.logs)")
            let listed = await erin.json(["conversations", "--json"]).first { $0["id"] as? String == conversation }
            #expect(listed?["name"] as? String == "night shift" && listed?["member"] as? Bool == true)
            #expect(Set(listed?["members"] as? [String] ?? []) == [alice.id, bob.id, erin.id])
            #expect(await Self.texts(dave, conversation).isEmpty)
            #expect(Self.storeBytes(dave).range(of: Data(welcome.utf8)) == nil)

            // Last seen outlives the node: with dave stopped, `people` still says when alice was seen.
            await dave.stop()
            let seen = await dave.json(["people", "--json"]).first { $0["id"] as? String == alice.id }
            #expect(seen?["presence"] as? String == "offline")
            #expect(seen?["last_seen"] != nil && !(seen?["last_seen"] is NSNull), "\(String(describing: seen))")
        }

        @Test func unreadCounts_areExact_afterConcurrentPostsFromThreeNodes_andAfterRead() async throws {
            let cluster = NodeCluster(slot: 17)
            defer { cluster.shutdown() }
            let nodes = [try await cluster.node("ann"), try await cluster.node("ben"), try await cluster.node("cat")]
            for node in nodes { try await node.start(cluster.loopbackArguments + syncTiming) }
            try #require(await poll(timeout: .seconds(15)) { await allLinked(nodes) }, "\(cluster.logs)")
            let conversation = await Self.run(nodes[0], ["conversation", "create", "--name", "tally", "--members", "\(nodes[1].id),\(nodes[2].id)"])
            let joined = await poll(timeout: .seconds(15)) {
                for node in nodes where await node.json(["conversations", "--json"]).first?["id"] as? String != conversation { return false }
                return true
            }
            try #require(joined, "\(cluster.logs)")

            let perNode = 12
            await withTaskGroup(of: Void.self) { group in
                for node in nodes {
                    group.addTask {
                        for index in 0..<perNode {
                            await Self.run(node, ["send", "--room", "lobby", "\(node.name) \(index)"])
                            await Self.run(node, ["send", "--conversation", conversation, "\(node.name) \(index)"])
                        }
                    }
                }
            }
            /// (lobby, conversation) unread counts on `node`; -1 where one is missing.
            func unread(_ node: TestNode) async -> [Int] {
                let room = await node.json(["rooms", "--json"]).first { $0["name"] as? String == "lobby" }?["unread"] as? Int
                let conv = await node.json(["conversations", "--json"]).first { $0["id"] as? String == conversation }?["unread"] as? Int
                return [room ?? -1, conv ?? -1]
            }
            let expected = perNode * (nodes.count - 1)
            let exact = await poll(timeout: .seconds(20)) {
                for node in nodes where await unread(node) != [expected, expected] { return false }
                return true
            }
            let counts = await nodes.asyncMap { await unread($0) }
            #expect(exact, "unread counts \(counts), expected \(expected) each\n\(cluster.logs)")

            await Self.run(nodes[1], ["read", "--room", "lobby"])
            await Self.run(nodes[1], ["read", "--conversation", conversation, "--receipt"])
            #expect(await unread(nodes[1]) == [0, 0])
            // The receipt reaches the other members: every message not by ben is read by him.
            let receipted = await poll(timeout: .seconds(10)) {
                let history = await nodes[0].json(["history", "--conversation", conversation, "--json"])
                return history.count == perNode * nodes.count
                    && history.allSatisfy { ($0["read_by"] as? [String] ?? []) == ($0["author"] as? String == nodes[1].id ? [] : [nodes[1].id]) }
            }
            #expect(receipted, "\(cluster.logs)")
            #expect(await unread(nodes[0]) == [expected, expected], "a read on one node changes no other user's counts")
            await Self.run(nodes[2], ["send", "--room", "lobby", "one more"])
            await Self.run(nodes[2], ["send", "--conversation", conversation, "one more"])
            let counted = await poll(timeout: .seconds(10)) { await unread(nodes[1]) == [1, 1] }
            let final = await unread(nodes[1])
            #expect(counted, "\(final)")
        }
    }
}
