import Foundation
import Identity
import Presentation
import Replica
import Store
import TestSupport
import Testing

/// `send`, `history`, `edit`, `delete`, `react`, `read` and `rooms`, checked through the
/// JSON contract of docs/DESIGN.md §6.1.
@Suite(.onCommandThreads) struct MessageCommandTests {
    static let historyFields: Set<String> = [
        "id", "author", "nick", "time", "hlc", "text", "edited", "deleted", "reactions", "attachments", "location",
    ]

    @Test func send_thenHistoryJSON_showsTheMessageWithEveryContractField() throws {
        try withSandbox { sandbox in
            let me = sandbox.initialize(nick: "alice")
            let sent = sandbox.parley("send", "--room", "lobby", "hello")
            expectSuccess(sent)
            let id = sent.stdout.trimmingCharacters(in: .newlines)
            #expect(sent.stdoutLines == [id] && id.count == 52)

            let history = sandbox.parley("history", "--room", "lobby", "--json")
            expectSuccess(history)
            let messages = history.jsonArray()
            try #require(messages.count == 1)
            let message = messages[0]
            #expect(Self.historyFields.isSubset(of: Set(message.keys)), "missing: \(Self.historyFields.subtracting(message.keys))")
            #expect(message["id"] as? String == id)
            #expect(message["author"] as? String == me)
            #expect(message["nick"] as? String == "alice")
            #expect(message["text"] as? String == "hello")
            #expect(message["edited"] as? Bool == false)
            #expect(message["deleted"] as? Bool == false)
            #expect((message["reactions"] as? [String: Any])?.isEmpty == true)
            #expect((message["attachments"] as? [Any])?.isEmpty == true)
            #expect(message["location"] is NSNull)
            #expect((message["hlc"] as? NSNumber)?.int64Value ?? 0 > 0)
            let time = message["time"] as? String ?? ""
            #expect(time.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil, "time: \(time)")
        }
    }

    /// `$PARLEY_CLOCK_SKEW_MS` skews every op a command stamps, as `run --clock-skew-ms` does
    /// the node's; a value that is not a skew is a usage error.
    @Test func clockSkewFromTheEnvironment_stampsTheCommandsOps() throws {
        try withSandbox { sandbox in
            sandbox.initialize()
            expectSuccess(sandbox.parley("send", "--room", "lobby", "ten minutes early", environment: ["PARLEY_CLOCK_SKEW_MS": "600000"]))
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let hlc = try #require(sandbox.parley("history", "--room", "lobby", "--json").jsonArray().first?["hlc"] as? Int64)
            let lead = (hlc >> 16) - now
            #expect((540_000...660_000).contains(lead), "stamped \(lead) ms ahead")
            expectError(sandbox.parley("send", "--room", "lobby", "x", environment: ["PARLEY_CLOCK_SKEW_MS": "soon"]), exitCode: 2, "PARLEY_CLOCK_SKEW_MS")
        }
    }

    @Test func roomNames_withHashAndCapitals_areOneRoom() throws {
        try withSandbox { sandbox in
            sandbox.initialize()
            expectSuccess(sandbox.parley("send", "--room", "#Lobby", "one"))
            expectSuccess(sandbox.parley("send", "--room", " LOBBY ", "two"))
            let texts = sandbox.parley("history", "--room", "lobby", "--json").jsonArray().map { $0["text"] as? String }
            #expect(texts == ["one", "two"])
            let rooms = sandbox.parley("rooms", "--json").jsonArray()
            #expect(rooms.map { $0["name"] as? String } == ["lobby"])
            #expect((rooms.first?["partition"] as? String)?.count == 52)
        }
    }

    @Test func editDeleteReact_areReflectedInHistory() throws {
        try withSandbox { sandbox in
            let me = sandbox.initialize()
            let first = sandbox.parley("send", "--room", "lobby", "helo").stdout.trimmingCharacters(in: .newlines)
            let second = sandbox.parley("send", "--room", "lobby", "--location", "52.52,13.405", "here").stdout
                .trimmingCharacters(in: .newlines)
            expectSuccess(sandbox.parley("edit", first, "hello"))
            // A unique prefix of 8+ characters works as well as the full id.
            expectSuccess(sandbox.parley("react", String(first.prefix(10)), "👍"))
            expectSuccess(sandbox.parley("react", first, "🎉"))
            expectSuccess(sandbox.parley("react", first, "🎉", "--off"))
            expectSuccess(sandbox.parley("delete", second))

            let messages = sandbox.parley("history", "--room", "lobby", "--json").jsonArray()
            try #require(messages.count == 2)
            #expect(messages[0]["text"] as? String == "hello")
            #expect(messages[0]["edited"] as? Bool == true)
            #expect(messages[0]["reactions"] as? [String: [String]] == ["👍": [me]])
            #expect(messages[1]["deleted"] as? Bool == true)
            #expect(messages[1]["location"] is NSNull)

            let text = sandbox.parley("history", "--room", "lobby")
            expectSuccess(text)
            #expect(text.stdoutLines.count == 2)
            #expect(text.stdoutLines.first?.hasSuffix("alice#\(me.prefix(6)): hello (edited) [👍 1]") == true, "\(text)")
            #expect(text.stdoutLines.last?.contains("(message deleted)") == true, "\(text)")
        }
    }

    @Test func history_limit_keepsTheNewest() throws {
        try withSandbox { sandbox in
            sandbox.initialize()
            for text in ["a", "b", "c"] { expectSuccess(sandbox.parley("send", "--room", "lobby", text)) }
            let texts = sandbox.parley("history", "--room", "lobby", "--limit", "2", "--json").jsonArray().map { $0["text"] as? String }
            #expect(texts == ["b", "c"])
        }
    }

    @Test func joinLeave_controlWhereYouCanWrite() throws {
        try withSandbox { sandbox in
            sandbox.initialize()
            expectError(sandbox.parley("send", "--room", "dev", "hi"), exitCode: 1, "you have not joined #dev; run `parley join dev` first")
            expectSuccess(sandbox.parley("join", "#Dev"))
            expectSuccess(sandbox.parley("send", "--room", "dev", "hi"))
            #expect(sandbox.parley("rooms", "--json").jsonArray().map { $0["name"] as? String } == ["dev", "lobby"])
            expectSuccess(sandbox.parley("leave", "dev"))
            #expect(sandbox.parley("rooms", "--json").jsonArray().map { $0["name"] as? String } == ["lobby"])
            expectError(sandbox.parley("history", "--room", "dev"), exitCode: 1, "you have not joined #dev")
            expectError(sandbox.parley("leave", "dev"), exitCode: 1, "you are not in #dev")
        }
    }

    /// Another author's messages (written straight into the store, as gossip would) count as
    /// unread until `read`, and cannot be edited or deleted.
    @Test func messagesFromSomeoneElse_areUnreadUntilRead_andNotEditable() throws {
        try withSandbox { sandbox in
            sandbox.initialize(nick: "alice")
            expectSuccess(sandbox.parley("send", "--room", "lobby", "mine"))
            #expect(sandbox.parley("rooms", "--json").jsonArray().first?["unread"] as? Int == 0)

            let bob = Fixtures.identity(7)
            let lobby = PartitionDescriptor.room(RoomName("lobby")!).id
            var bobsMessage = OpID.zero
            do {
                let store = try NodeStore.open(sandbox.dataDir)
                let now = UInt64(Date().timeIntervalSince1970 * 1000)
                try store.author(
                    .profile(subject: bob.id, nick: "bob", displayName: nil, status: nil, presence: nil, avatar: nil),
                    in: PartitionDescriptor.directory.id, by: bob, nowMillis: now)
                bobsMessage = try store.author(
                    .post(text: "hi alice", attachments: [], location: nil, replyTo: nil),
                    in: lobby, by: bob, nowMillis: now + 1
                ).id
                try store.author(
                    .post(text: "still there?", attachments: [], location: nil, replyTo: nil),
                    in: lobby, by: bob, nowMillis: now + 2)
                store.database.close()
            }
            #expect(sandbox.parley("rooms", "--json").jsonArray().first?["unread"] as? Int == 2)
            expectSuccess(sandbox.parley("read", "--room", "lobby"))
            #expect(sandbox.parley("rooms", "--json").jsonArray().first?["unread"] as? Int == 0)

            expectError(sandbox.parley("edit", bobsMessage.text, "hacked"), exitCode: 1, "you can only edit your own messages")
            expectError(sandbox.parley("delete", bobsMessage.text), exitCode: 1, "you can only delete your own messages")
            expectSuccess(sandbox.parley("react", bobsMessage.text, "👋"))
            let history = sandbox.parley("history", "--room", "lobby", "--json").jsonArray()
            #expect(history.map { $0["nick"] as? String } == ["alice", "bob", "bob"])
        }
    }
}

/// `mute` and `unmute`: the choice shows in `rooms` and `conversations` (text and JSON), saying
/// so once when nothing changes.
@Suite(.onCommandThreads) struct MuteCommandTests {
    @Test func muteAndUnmute_showInTheListings() throws {
        try withSandbox { sandbox in
            sandbox.initialize(nick: "alice")
            expectSuccess(sandbox.parley("join", "lobby"))
            let muted = sandbox.parley("mute", "--room", "lobby")
            expectSuccess(muted)
            #expect(muted.stdout.contains("Muted #lobby"))
            #expect(sandbox.parley("rooms").stdout.contains("#lobby  (muted)"))
            #expect(sandbox.parley("rooms", "--json").jsonArray().first?["muted"] as? Bool == true)
            #expect(sandbox.parley("mute", "--room", "lobby").stdout.contains("muted already"))

            let created = sandbox.parley("conversation", "create", "--name", "notes", "--members", Fixtures.identity(5).id.text)
            expectSuccess(created)
            let conversation = String(try #require(sandbox.parley("conversations", "--json").jsonArray().first?["id"] as? String).prefix(8))
            expectSuccess(sandbox.parley("mute", "--conversation", conversation))
            #expect(sandbox.parley("conversations", "--json").jsonArray().first?["muted"] as? Bool == true)

            expectSuccess(sandbox.parley("unmute", "--room", "lobby"))
            #expect(sandbox.parley("rooms", "--json").jsonArray().first?["muted"] as? Bool == false)
            #expect(!sandbox.parley("rooms").stdout.contains("muted"))
            expectError(sandbox.parley("mute"), exitCode: 2, "missing --room NAME or --conversation ID")
        }
    }
}
