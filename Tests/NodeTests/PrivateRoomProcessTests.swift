import Foundation
import Store
import TestSupport
import Testing

extension NodeProcessTests {
    /// Private rooms between real `parley run` processes (issue 40, docs/DESIGN.md §3.7): two
    /// holders of the passphrase converse through a node that does not hold it, which carries
    /// the ops and can neither read, name nor write into the room; the same name with another
    /// passphrase is another room.
    @Suite struct PrivateRooms {
        typealias Support = Conversations

        /// The texts of `history --room NAME --json` on `node`.
        static func texts(_ node: TestNode, room: String) async -> [String] {
            await node.json(["history", "--room", room, "--json"]).compactMap { $0["text"] as? String }
        }

        /// A file holding `passphrase` on one line.
        static func passphraseFile(_ cluster: NodeCluster, _ name: String, _ passphrase: String) throws -> String {
            let path = cluster.root + "/\(name).pass"
            try Data((passphrase + "\n").utf8).write(to: URL(fileURLWithPath: path))
            return path
        }

        @Test func twoHoldersConverseThroughACarrier_thatCannotReadNameOrWriteTheRoom_andAnotherPassphraseIsAnotherRoom() async throws {
            let cluster = NodeCluster(slot: 19)  // no discovery: the port is unused; the suite is serialized
            defer { cluster.shutdown() }
            let alice = try await cluster.node("alice"), bob = try await cluster.node("bob"), carol = try await cluster.node("carol")
            let roomName = "moonlit-vault"
            let right = try Self.passphraseFile(cluster, "right", "correct horse battery staple")
            let wrong = try Self.passphraseFile(cluster, "wrong", "incorrect horse battery staple")
            for node in [alice, bob] {
                let joined = await Support.run(node, ["join", "#Moonlit-Vault", "--room-passphrase-file", right])
                #expect(joined == "joined private room #\(roomName)")
            }
            // alice and bob know only carol (static peers, no discovery): everything between
            // them goes through carol, who never joins the room.
            try await Support.startLinkedThrough(carol, [alice, bob], in: cluster)
            #expect(!(await alice.lists([bob], as: "linked")))

            let rooms = await alice.json(["rooms", "--json"])
            let listed = try #require(rooms.first { $0["private"] as? Bool == true }, "\(rooms)")
            #expect(listed["name"] as? String == roomName)
            let partition = try #require(listed["partition"] as? String)

            let secrets = ["alice: the vault opens at 04:10", "bob: bring the blue keycard"]
            await Support.run(alice, ["send", "--room", roomName, secrets[0]])
            await Support.run(bob, ["send", "--room", roomName, secrets[1]])
            let conversed = await poll(timeout: .seconds(20)) {
                for node in [alice, bob] where Set(await Self.texts(node, room: roomName)) != Set(secrets) { return false }
                return true
            }
            try #require(conversed, "\(cluster.logs)")

            // carol carries every op of the room (equal digests) and holds no word of it, nor its name.
            let carried = await poll(timeout: .seconds(20)) {
                guard let reference = await Support.digest(alice, partition) else { return false }
                return await Support.digest(carol, partition) == reference
            }
            #expect(carried, "carol does not carry the private room\n\(cluster.logs)")
            let carolBytes = Support.storeBytes(carol)
            #expect(!carolBytes.isEmpty)
            for plaintext in secrets + [roomName, "Moonlit-Vault"] {
                #expect(carolBytes.range(of: Data(plaintext.utf8)) == nil, "carol's store holds \"\(plaintext)\"")
            }
            var said = ""
            for arguments in [["rooms", "--json"], ["rooms"], ["digest", "--json"], ["digest"], ["status", "--json"], ["conversations", "--json"]] {
                let result = await carol.parley(arguments)
                said += result.stdout + result.stderr
            }
            for plaintext in secrets + [roomName] { #expect(!said.contains(plaintext), "a command on carol shows \"\(plaintext)\"") }
            // Asked by name, carol finds no room (the answer names only what was typed).
            let asked = await carol.parley(["history", "--room", roomName, "--json"])
            #expect(asked.exitCode != 0 && asked.stderr.contains("you have not joined #\(roomName)"), "\(asked)")
            for secret in secrets { #expect(!(asked.stdout + asked.stderr).contains(secret)) }
            let carolsRow = await carol.json(["digest", "--json"]).first { $0["partition"] as? String == partition }
            #expect(carolsRow?["kind"] as? String == "private-room" && carolsRow?["name"] as? String == "" && carolsRow?["joined"] as? Bool == false)

            // The same name with another passphrase is another room: carol joins it and writes;
            // nothing crosses either way, and alice's room gains no op from her.
            let before = await Support.digest(alice, partition)
            #expect(await Support.run(carol, ["join", roomName, "--room-passphrase-file", wrong]) == "joined private room #\(roomName)")
            let decoy = "carol: let me in"
            await Support.run(carol, ["send", "--room", roomName, decoy])
            let carolsRooms = await carol.json(["rooms", "--json"]).filter { $0["private"] as? Bool == true }
            #expect(carolsRooms.count == 1 && carolsRooms.first?["partition"] as? String != partition, "\(carolsRooms)")
            #expect(await Self.texts(carol, room: roomName) == [decoy])
            // A later message of alice's reaches bob through carol, and the decoy reaches neither.
            let later = "alice: plan B is the north door"
            await Support.run(alice, ["send", "--room", roomName, later])
            #expect(await poll(timeout: .seconds(20)) { await Self.texts(bob, room: roomName).contains(later) }, "\(cluster.logs)")
            for node in [alice, bob] { #expect(!(await Self.texts(node, room: roomName).contains(decoy))) }
            #expect(await Self.texts(carol, room: roomName) == [decoy])
            let carolsDigest = await Support.digest(carol, partition)
            #expect(before != nil && carolsDigest != nil)
            #expect(Support.storeBytes(carol).range(of: Data(later.utf8)) == nil)
        }

        @Test func aPassphraseChange_locksOutOldHolders_andANewHolderReadsTheWholeHistory() async throws {
            let cluster = NodeCluster(slot: 19)  // no discovery: the port is unused; the suite is serialized
            defer { cluster.shutdown() }
            let alice = try await cluster.node("alice"), bob = try await cluster.node("bob")
            let carol = try await cluster.node("carol"), dave = try await cluster.node("dave")
            let room = "moonlit-vault"
            let old = try Self.passphraseFile(cluster, "old", "correct horse battery staple")
            let new = try Self.passphraseFile(cluster, "new", "a much longer and newer passphrase")
            for node in [alice, bob] { await Support.run(node, ["join", room, "--room-passphrase-file", old]) }
            try await Support.startLinkedThrough(carol, [alice, bob], in: cluster)

            let before = "alice: the vault opens at 04:10"
            await Support.run(alice, ["send", "--room", room, before])
            try #require(await poll(timeout: .seconds(20)) { await Self.texts(bob, room: room).contains(before) }, "\(cluster.logs)")
            let oldPartition = try #require(await alice.json(["rooms", "--json"]).first { $0["private"] as? Bool == true }?["partition"] as? String)

            let changed = await Support.run(alice, ["room", "passphrase", room, "--new-room-passphrase-file", new])
            #expect(changed.hasPrefix("changed the passphrase of private room #\(room)"), "\(changed)")
            let after = "alice: bob is out; the new door code is 7319"
            await Support.run(alice, ["send", "--room", room, after])
            let listed = await alice.json(["rooms", "--json"]).filter { $0["private"] as? Bool == true }
            #expect(listed.count == 1 && listed.first?["partition"] as? String != oldPartition, "\(listed)")
            #expect(await Self.texts(alice, room: room).suffix(2) == [Views.passphraseChangedText, after])

            // bob, with only the old passphrase, sees the notice and never the later message.
            let noticed = await poll(timeout: .seconds(20)) { await Self.texts(bob, room: room).contains(Views.passphraseChangedText) }
            #expect(noticed, "\(cluster.logs)")
            // dave joins with the new passphrase only, and reads the old history and the new.
            await Support.run(dave, ["join", room, "--room-passphrase-file", new])
            let davesPeers = try await dave.writePeersFile([carol], in: cluster.root)
            try await dave.start(["--listen", "127.0.0.1:0", "--no-discovery", "--peers", davesPeers] + syncTiming)
            let read = await poll(timeout: .seconds(30)) { await Self.texts(dave, room: room) == [before, Views.passphraseChangedText, after] }
            let davesTexts = await Self.texts(dave, room: room)
            #expect(read, "dave reads \(davesTexts)\n\(cluster.logs)")
            // By now every op is on carol, and so on bob's side of her: bob still reads nothing later.
            let bobs = await Self.texts(bob, room: room)
            #expect(bobs == [before, Views.passphraseChangedText], "\(bobs)")
            #expect(Support.storeBytes(bob).range(of: Data(after.utf8)) == nil)
            #expect(Support.storeBytes(carol).range(of: Data(after.utf8)) == nil && Support.storeBytes(carol).range(of: Data(before.utf8)) == nil)
        }
    }
}
