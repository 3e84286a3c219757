import Identity
import Presentation
import Replica
import Store

/// Where a command reads or writes: a joined room (`--room NAME`) or a conversation
/// (`--conversation ID`).
struct Target {
    let id: PartitionID
    /// `#lobby` or the conversation's name, for messages.
    let label: String
    /// The option that names it again in a hint: `--room lobby`, `--conversation 3fkq7zxa`.
    let option: String
}

extension Context {
    /// The room or conversation the command's `--room` / `--conversation` options name (`room`,
    /// `conversation`: their values, nil when not given); a usage error unless exactly one is given. A conversation the user never belonged to is refused
    /// (a former member may still read what came before they left; writing is refused later,
    /// by the store, for anyone who is not a current member).
    func target(room: String?, conversation: String?, command: String) throws(CLIError) -> Target {
        switch (room, conversation) {
        case (nil, nil):
            throw .usage("missing --room NAME or --conversation ID", command: command)
        case (.some, .some):
            throw .usage("give --room or --conversation, not both", command: command)
        case (let room?, nil):
            let joined = try joinedRoom(room, command: command)
            return Target(id: joined.id, label: joined.name.description, option: "--room \(joined.name.value)")
        case (nil, let text?):
            let conversation = try Lookup.conversation(text, context: self, command: command)
            let me = try self.me()
            guard conversation.members.everMember.contains(me) else {
                throw .failure("you are not a member of conversation \(conversation.id.text); `parley conversations` lists yours")
            }
            return Target(id: conversation.id, label: conversation.label, option: "--conversation \(Format.shortID(conversation.id))")
        }
    }
}

/// A conversation found by id, with what commands need to say about it.
struct FoundConversation {
    let id: PartitionID
    let creator: UserID
    let name: String
    let members: Membership.State
    /// `'name'`, or the short id when the name is not (yet) readable.
    var label: String { name.isEmpty ? "conversation \(Format.shortID(id))" : "'\(Format.safe(name, keepNewlines: false))'" }
}

extension Lookup {
    /// The conversation `text` names: its full 52-character id, or a unique prefix of at least 8
    /// characters among the conversations this node knows.
    static func conversation(_ text: String, context: Context, command: String) throws(CLIError) -> FoundConversation {
        let typed = text.trimmingWhitespace().lowercased()
        let shown = typed.isEmpty ? "''" : "'\(typed)'"
        guard typed.utf8.count >= minimumPrefix, typed.utf8.count <= idLength, typed.utf8.allSatisfy(isIDCharacter) else {
            throw .usage(
                "\(shown) is not a conversation id: give the 52-character id `parley conversation create` printed, or at least its first \(minimumPrefix) characters",
                command: command)
        }
        let store = try context.store()
        let known = try context.storeCall {
            try store.log.partitions().filter { $0.descriptor.kind == .conversation && $0.id.text.hasPrefix(typed) }
        }
        guard known.count == 1, case .conversation(let creator, _) = known[0].descriptor else {
            if known.isEmpty { throw .failure("no conversation with id \(typed) here; `parley conversations` lists yours") }
            throw .failure("\(typed) matches \(known.count) conversation ids; give more characters of the id")
        }
        let id = known[0].id
        let details = try context.storeCall { try store.views.conversation(id) }
        return FoundConversation(id: id, creator: creator, name: details?.name ?? "", members: details?.members ?? Membership.State())
    }

    /// The person `text` names, for membership commands: a full user id, `me`, someone's
    /// `nick#xxxxxx`, a unique prefix (4 or more characters) of the id of someone in the
    /// directory, or a nickname only one person in the directory has.
    static func person(_ text: String, context: Context, command: String) throws(CLIError) -> UserID {
        let typed = text.trimmingWhitespace()
        guard !typed.isEmpty else { throw .usage("a user id is empty", command: command) }
        if typed == "me" { return try context.me() }
        let lowered = typed.lowercased()
        if lowered.utf8.count == idLength, let user = UserID(text: lowered) {
            guard user.canReceiveSealedBoxes else { throw .usage("'\(typed)' is not a valid user id (it is not a public key)", command: command) }
            return user
        }
        let store = try context.store()
        let people = try context.storeCall { try store.directory.profiles() }
        let matches: [ProfileView]
        if let hash = typed.lastIndex(of: "#") {
            let nick = String(typed[..<hash]), suffix = typed[typed.index(after: hash)...].lowercased()
            matches = people.filter { ($0.nick ?? "") == nick && !suffix.isEmpty && $0.user.text.hasPrefix(suffix) }
        } else {
            let byID = lowered.utf8.count >= 4 ? people.filter { $0.user.text.hasPrefix(lowered) } : []
            matches = byID.isEmpty ? people.filter { $0.nick == typed } : byID
        }
        switch matches.count {
        case 1: return matches[0].user
        case 0:
            throw .failure(
                "unknown user '\(Format.safe(typed, keepNewlines: false))': no one in the directory has that id or nickname; "
                    + "`parley people` lists everyone, or give the full 52-character user id")
        default:
            throw .failure("'\(Format.safe(typed, keepNewlines: false))' matches \(matches.count) people; give more characters of their user id")
        }
    }

    static func isIDCharacter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "2")...UInt8(ascii: "7")).contains(byte)
    }
}

extension Format {
    /// A conversation id shortened for people (accepted as a prefix by commands).
    static func shortID(_ id: PartitionID) -> String { String(id.text.prefix(shortIDLength)) }
}
