import Foundation
import Replica
import Testing

/// Issue 39, part 8, through the real binary: `parley import` says what it refused and why and
/// fails when it refused anything; text output cleans bidirectional overrides and controls the
/// way the chat does while `--json` keeps the exact text; arguments that are not UTF-8 are
/// refused instead of repaired.
@Suite(.onCommandThreads) struct TextInputOutputTests {
    // MARK: Import

    /// `file` rewritten with a valid checksum (as anyone who makes a file can), each op passed
    /// through `change`.
    static func rewrite(_ file: String, to output: String, change: (Replica.Operation) throws -> Replica.Operation) throws {
        let handle = try #require(FileHandle(forReadingAtPath: file))
        defer { try? handle.close() }
        let reader = try OpArchive.Reader { count in Array(try handle.read(upToCount: count) ?? Data()) }
        var bytes: [UInt8] = []
        let writer = try OpArchive.Writer { bytes += $0 }
        while let record = try reader.next() {
            if case .operation(let op) = record {
                try writer.write(.operation(try change(op)))
            } else {
                try writer.write(record)
            }
        }
        try writer.finish()
        try Data(bytes).write(to: URL(fileURLWithPath: output))
    }

    /// `op` with the byte at `offset` of its encoding flipped.
    static func flipping(_ op: Replica.Operation, at offset: Int) throws -> Replica.Operation {
        var bytes = op.encoded
        bytes[offset] ^= 0x01
        return try Replica.Operation(encoded: bytes)
    }

    @Test func importOfTamperedOps_countsRefusalsByReason_andFails() throws {
        try withSandbox { alice in
            try withSandbox { bob in
                let aliceID = alice.initialize(nick: "alice")
                bob.initialize(nick: "bob")
                for index in 1...5 { expectSuccess(alice.parley("send", "--room", "lobby", "message \(index)")) }
                let file = alice.root + "/lobby.parley"
                expectSuccess(alice.parley("export", "--out", file, "--room", "lobby"))
                // Alice's profile (in the directory) gets a changed signature; in her chain in
                // the room, seq 3 a changed body (its hash no longer matches), so seq 4 and 5
                // wait for it in vain.
                let tampered = alice.root + "/tampered.parley"
                try Self.rewrite(file, to: tampered) { op in
                    guard op.author.text == aliceID else { return op }
                    if op.partition == PartitionDescriptor.directory.id { return try Self.flipping(op, at: 152 + 10) }
                    return op.seq == 3 ? try Self.flipping(op, at: Replica.Operation.headerBytes + 2) : op
                }

                let text = bob.parley("import", tampered)
                print("TextInputOutputTests [import]: stdout: \(text.stdout)stderr: \(text.stderr)")
                #expect(text.exitCode == 1, "\(text)")
                #expect(text.stdout.contains("imported 2 new ops"), "\(text)")  // seq 1 and 2 in the room
                for reason in ["2 earlier ops missing", "1 bad signature", "1 body does not match its hash"] {
                    #expect(text.stdout.contains(reason), "\(reason): \(text)")
                    #expect(text.stderr.contains(reason), "\(reason): \(text)")
                }
                #expect(text.stderrLines.count == 1 && text.stderr.hasPrefix("parley: 4 ops in \(tampered) were refused"), "\(text)")
                #expect(text.stderr.contains("ask its sender for a fresh export"), "\(text)")

                let json = bob.parley("import", tampered, "--json")
                #expect(json.exitCode == 1, "\(json)")
                let summary = json.jsonArray().first ?? [:]
                #expect(summary["refused"] as? Int == 4, "\(json)")
                let reasons = summary["refused_by"] as? [String: Int]
                #expect(reasons == ["body does not match its hash": 1, "bad signature": 1, "earlier ops missing": 2], "\(json)")

                // The untouched file imports the rest with exit status 0.
                expectSuccess(bob.parley("import", file))
                let history = bob.parley("history", "--room", "lobby", "--json").jsonArray()
                #expect(history.count == 5)
            }
        }
    }

    // MARK: Text output

    @Test func bidiOverridesAndControls_areCleanedInTextOutput_andKeptInJSON() throws {
        try withSandbox { sandbox in
            // U+202E (right-to-left override) makes "txt.exe" show as "exe.txt"; ESC starts
            // a terminal escape sequence.
            let nick = "eve\u{202E}txt.exe"
            sandbox.initialize(nick: nick)
            let message = "see \u{2066}attached\u{2069} \u{202E}fdp.exe and \u{1B}[2Jbye"
            expectSuccess(sandbox.parley("send", "--room", "lobby", message))
            expectSuccess(sandbox.parley("profile", "--status", "away \u{202E}krow"))

            let outputs = [
                sandbox.parley("history", "--room", "lobby"), sandbox.parley("people"), sandbox.parley("profile"),
            ]
            for run in outputs {
                expectSuccess(run)
                let forbidden = run.stdout.unicodeScalars.filter {
                    (0x202A...0x202E).contains($0.value) || (0x2066...0x2069).contains($0.value) || $0.value == 0x1B
                }
                #expect(forbidden.isEmpty, "`\(run.arguments.joined(separator: " "))` printed \(forbidden.map { String($0.value, radix: 16) })")
                #expect(run.stdout.contains("\u{FFFD}"), "\(run)")
            }
            #expect(outputs[0].stdout.contains("eve\u{FFFD}txt.exe#"), "\(outputs[0])")
            #expect(outputs[0].stdout.contains("see \u{FFFD}attached\u{FFFD} \u{FFFD}fdp.exe and \u{FFFD}[2Jbye"), "\(outputs[0])")

            // JSON carries the exact text (escaped by JSON where it must be).
            let history = sandbox.parley("history", "--room", "lobby", "--json").jsonArray()
            #expect(history.first?["text"] as? String == message)
            #expect(history.first?["nick"] as? String == nick)
            let people = sandbox.parley("people", "--json").jsonArray()
            #expect(people.contains { $0["nick"] as? String == nick }, "\(people)")
        }
    }

    // MARK: Arguments that are not UTF-8

    /// Runs `parley --data-dir DIR arguments… LAST`, LAST being the bytes `printf` makes of
    /// `printfFormat`: a Swift `String` cannot hold bytes that are not UTF-8, a shell can.
    static func parley(_ sandbox: Sandbox, _ arguments: [String], lastFromPrintf printfFormat: String) -> ParleyRun {
        ParleyBinary.run(
            ["--data-dir", sandbox.dataDir] + arguments, home: sandbox.root,
            launcher: ["/bin/sh", "-c", "binary=\"$1\"; shift; exec \"$binary\" \"$@\" \"$(printf '\(printfFormat)')\"", "sh"])
    }

    @Test func argumentsThatAreNotUTF8_areRefusedWithTheirPlace_andNothingIsStored() throws {
        try withSandbox { sandbox in
            sandbox.initialize(nick: "alice")
            // Latin-1 "café": 0xE9 alone is not UTF-8.
            let message = Self.parley(sandbox, ["send", "--room", "lobby"], lastFromPrintf: "caf\\351 au lait")
            expectError(message, exitCode: 2, "argument 6 is not valid UTF-8 (byte 0xE9 after 'caf')")
            #expect(message.stderr.contains("iconv -t UTF-8"), "\(message)")
            let history = sandbox.parley("history", "--room", "lobby", "--json")
            #expect(history.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]", "\(history)")

            let nick = Self.parley(sandbox, ["profile", "--nick"], lastFromPrintf: "\\377bob")
            expectError(nick, exitCode: 2, "argument 5 is not valid UTF-8 (byte 0xFF at its start)")
            let profile = sandbox.parley("profile", "--json").jsonArray()
            #expect(profile.first?["nick"] as? String == "alice", "\(profile)")

            // Valid UTF-8 beyond ASCII passes.
            expectSuccess(Self.parley(sandbox, ["send", "--room", "lobby"], lastFromPrintf: "caf\\303\\251"))
            let texts = sandbox.parley("history", "--room", "lobby", "--json").jsonArray().map { $0["text"] as? String }
            #expect(texts == ["café"])
        }
    }
}
