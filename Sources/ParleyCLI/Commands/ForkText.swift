import Identity
import NodeRuntime
import Presentation

/// How the command line speaks of a chain frozen by a fork (`doctor`, `status`): one identity
/// key signed two different ops at one seq, so every replica leaves out its ops there from that
/// seq on (docs/DESIGN.md §3.3).
enum ForkText {
    /// Whether the fork is this node's user's: `me` holds this node's key and its person.
    static func isMine(_ fork: ForkReport, me: Set<String>) -> Bool {
        me.contains(fork.author) || me.contains(fork.person)
    }

    /// The partition's name and the seq, fit for a terminal: "#lobby at seq 12".
    static func place(_ fork: ForkReport) -> String {
        "\(Format.safe(fork.name, keepNewlines: false)) at seq \(fork.seq)"
    }

    /// A fork of this user's key: what happened and what to do.
    static func problem(_ fork: ForkReport) -> String {
        "your key forked in \(place(fork)): one identity.key wrote from two data directories, and this key cannot write "
            + "there any more; `parley device recover` (or restarting the node) makes each directory a device of yours that "
            + "writes on, and from now on give another machine a key of its own (`parley device pair` here, `parley init "
            + "--pair` there) instead of a copy"
    }

    /// Someone else's fork: a note.
    static func note(_ fork: ForkReport, nick: String?) -> String {
        let person = UserID(text: fork.person).map { Format.person($0, nick: nick) } ?? fork.person
        let device = fork.author == fork.person ? "" : " (device \(UserID(text: fork.author)?.short ?? fork.author))"
        return "\(person)\(device) forked in \(place(fork)): their key wrote two different changes there (copied to a "
            + "second machine?); their changes there from that seq on are left out on every node"
    }
}
