import Foundation
import Testing

@testable import ParleyCLI

/// A fork made the way users make one: one identity.key copied into a second data directory,
/// both writing in #lobby, the second's changes imported into the first. `people`, `doctor`
/// and the chat's `/who` show it; the owner of the key gets what to do, others a note.
@Suite(.onCommandThreads) struct ForkDisplayTests {
    /// Alice's two data directories write at one seq of #lobby; `into` imports both exports.
    func forkAlice(_ alice: Sandbox, copy: Sandbox, into others: [Sandbox]) throws {
        try FileManager.default.createDirectory(atPath: copy.dataDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.copyItem(atPath: alice.dataDir + "/identity.key", toPath: copy.dataDir + "/identity.key")
        expectSuccess(alice.parley("send", "--room", "lobby", "from the desk"))
        expectSuccess(copy.parley("join", "lobby"))
        expectSuccess(copy.parley("send", "--room", "lobby", "from the copy"))
        let (deskFile, copyFile) = (alice.root + "/desk.parley", copy.root + "/copy.parley")
        expectSuccess(alice.parley("export", "--out", deskFile))
        expectSuccess(copy.parley("export", "--out", copyFile, "--room", "lobby"))
        let imported = alice.parley("import", copyFile)
        expectSuccess(imported)
        #expect(imported.stdout.contains("; 1 fork found (`parley doctor` says more)"), "\(imported)")
        for other in others {
            expectSuccess(other.parley("import", deskFile))
            expectSuccess(other.parley("import", copyFile))
        }
    }

    @Test func people_andDoctor_showAFork_asAProblemForItsOwner_andANoteForOthers() throws {
        try withSandbox { alice in
            try withSandbox { copy in
                try withSandbox { bob in
                    let aliceID = alice.initialize(nick: "alice")
                    bob.initialize(nick: "bob")
                    expectSuccess(alice.parley("people", "--json"))
                    #expect(alice.parley("people", "--json").jsonArray().first?["forks"] as? Int == 0)
                    #expect(!alice.parley("doctor").stdout.contains("Forks:"))
                    try forkAlice(alice, copy: copy, into: [bob])

                    let mine = alice.parley("people", "--json").jsonArray()
                    #expect(mine.map { $0["forks"] as? Int } == [1], "\(mine)")
                    #expect(alice.parley("people").stdout.contains("! forked in 1 partition"))
                    let doctor = alice.parley("doctor")
                    #expect(doctor.exitCode == 0, "\(doctor)")
                    #expect(
                        doctor.stdout.contains("Forks:\n  ! your key forked in #lobby at seq 1: one identity.key wrote from two data directories")
                            && doctor.stdout.contains("`parley device pair` here"), "\(doctor)")

                    let theirs = bob.parley("people", "--json").jsonArray()
                    #expect(theirs.first { $0["id"] as? String == aliceID }?["forks"] as? Int == 1, "\(theirs)")
                    #expect(theirs.first { $0["me"] as? Bool == true }?["forks"] as? Int == 0, "\(theirs)")
                    let noted = bob.parley("doctor")
                    #expect(noted.exitCode == 0, "\(noted)")
                    #expect(noted.stdout.contains("  alice#\(aliceID.prefix(6)) forked in #lobby at seq 1: their key wrote"), "\(noted)")
                    #expect(!noted.stdout.contains("! your key"), "\(noted)")
                }
            }
        }
    }

    @Test func who_marksAForkedPerson() throws {
        try withSandbox { alice in
            try withSandbox { copy in
                try withSandbox { bob in
                    let aliceID = alice.initialize(nick: "alice")
                    bob.initialize(nick: "bob")
                    try forkAlice(alice, copy: copy, into: [bob])
                    let context = Context(
                        output: Output(capturing: { _, _ in }), environment: ["HOME": bob.root], dataDirectory: bob.dataDir, passphraseFile: nil)
                    let people = try context.store().directory.people(me: try context.me())
                    let lines = people.map(ChatSession.whoLine)
                    #expect(lines.contains { $0.hasPrefix("alice#\(aliceID.prefix(6)) offline") && $0.hasSuffix(" (forked)") }, "\(lines)")
                    #expect(lines.contains { $0.hasPrefix("bob#") && !$0.contains("forked") }, "\(lines)")
                }
            }
        }
    }
}
