import Identity
import Presentation
import Replica
import Store
import Wire

/// Turning what a person typed into the things the store knows: message and task ids (full or a
/// unique prefix), user ids, and option values. Malformed input is a usage error (exit 2);
/// well-formed input that matches nothing is a failure (exit 1).
enum Lookup {
    /// The shortest id prefix accepted: 8 base32 characters (40 bits).
    static let minimumPrefix = 8
    static let idLength = 52

    /// What kind of id is being resolved, for the messages and the candidates.
    enum IDKind {
        case message, task

        var noun: String { self == .message ? "message" : "task" }

        /// How to list the ids, for the "not found" message.
        var listHint: String {
            self == .message
                ? "list them with `parley history (--room NAME | --conversation ID) --ids`"
                : "list them with `parley tasks (--room NAME | --conversation ID)`"
        }

        /// The ids whose text starts with `prefix` (base32, checked by the caller).
        func ids(startingWith prefix: String, in store: ReplicaStore) throws -> [OpID] {
            guard let (low, high) = Base32.prefixRange(prefix, byteCount: 32) else { return [] }
            return self == .message ? try store.views.messageIDs(from: low, through: high) : try store.views.taskIDs(from: low, through: high)
        }
    }

    /// The id `text` names: a full 52-character id, or a prefix of at least 8 characters that
    /// matches exactly one id. A full id is returned without checking that it exists.
    static func id(_ text: String, _ kind: IDKind, context: Context, command: String) throws(CLIError) -> OpID {
        let typed = text.trimmingWhitespace().lowercased()
        let shown = typed.isEmpty ? "''" : "'\(typed)'"
        guard !typed.isEmpty, typed.utf8.allSatisfy(isBase32) else {
            throw .usage("\(shown) is not a \(kind.noun) id: ids use only the letters a-z and digits 2-7", command: command)
        }
        guard typed.utf8.count >= minimumPrefix else {
            throw .usage(
                "\(shown) is too short for a \(kind.noun) id: give the full id or at least its first \(minimumPrefix) characters",
                command: command)
        }
        guard typed.utf8.count <= idLength else {
            throw .usage("\(shown) is not a \(kind.noun) id: ids are \(idLength) characters long", command: command)
        }
        if typed.utf8.count == idLength {
            guard let id = OpID(text: typed) else {
                throw .usage("\(shown) is not a valid \(kind.noun) id (its last character cannot end an id)", command: command)
            }
            return id
        }
        let store = try context.store()
        let matches = try context.storeCall { try kind.ids(startingWith: typed, in: store) }
        switch matches.count {
        case 0: throw .failure("no \(kind.noun) id starts with \(typed); \(kind.listHint)")
        case 1: return matches[0]
        default: throw .failure("\(typed) matches \(matches.count) \(kind.noun) ids; give more characters of the id")
        }
    }

    /// The message `text` names, with its partition; fails when there is none.
    static func message(_ text: String, context: Context, command: String) throws(CLIError) -> (partition: PartitionID, message: MessageView) {
        let id = try id(text, .message, context: context, command: command)
        let store = try context.store()
        guard let found = try context.storeCall({ try store.views.message(id) }) else {
            throw .failure("no message with id \(id.text); \(IDKind.message.listHint)")
        }
        return found
    }

    /// The task `text` names, with its partition; fails when there is none (or it was deleted).
    static func task(_ text: String, context: Context, command: String) throws(CLIError) -> (partition: PartitionID, task: TaskView) {
        let id = try id(text, .task, context: context, command: command)
        let store = try context.store()
        guard let found = try context.storeCall({ try store.views.task(id) }) else {
            throw .failure("no task with id \(id.text) (or it was deleted); \(IDKind.task.listHint)")
        }
        return found
    }

    /// A user id given on the command line; `me` stands for your own.
    static func user(_ text: String, option: String, context: Context, command: String) throws(CLIError) -> UserID {
        if text == "me" { return try context.me() }
        guard let user = UserID(text: text.trimmingWhitespace().lowercased()) else {
            throw .usage(
                "--\(option) needs a user id (52 characters of a-z and 2-7, as `parley whoami` prints) or `me`, not '\(text)'",
                command: command)
        }
        return user
    }

    /// Positional words joined by spaces (so `parley send --room x hello world` works without
    /// quotes); a usage error when nothing but whitespace is left.
    static func text(_ words: [String], what: String, command: String) throws(CLIError) -> String {
        let text = words.joined(separator: " ")
        guard !text.trimmingWhitespace().isEmpty else {
            throw .usage("the \(what) is empty", command: command)
        }
        return text
    }

    /// A positive whole number for `--option`.
    static func positiveInteger(_ text: String, option: String, command: String) throws(CLIError) -> Int {
        guard let value = Int(text.trimmingWhitespace()), value > 0 else {
            throw .usage("--\(option) must be a positive whole number, not '\(text)'", command: command)
        }
        return value
    }

    /// `LAT,LON` in degrees for `--location`.
    static func location(_ text: String, command: String) throws(CLIError) -> Location {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { String($0).trimmingWhitespace() }
        guard parts.count == 2, let latitude = Double(parts[0]), let longitude = Double(parts[1]) else {
            throw .usage("--location must be LAT,LON in degrees (for example 52.52,13.405), not '\(text)'", command: command)
        }
        let location = Location(latitude: latitude, longitude: longitude)
        guard location.isValid else {
            throw .usage(
                "--location \(text) is off the globe: latitude must be within -90...90 and longitude within -180...180",
                command: command)
        }
        return location
    }

    private static func isBase32(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "2")...UInt8(ascii: "7")).contains(byte)
    }
}

extension String {
    /// The text without leading and trailing whitespace (Unicode's definition).
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let start = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let end = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[start...end])
    }
}

extension Lookup {
    /// A nickname: trimmed, then checked by `Validation.nicknameProblem` (1–32 characters, no
    /// spaces, control characters or `#`).
    static func nickname(_ text: String, option: String, command: String) throws(CLIError) -> String {
        let nick = text.trimmingWhitespace()
        guard !nick.isEmpty else { throw .usage("--\(option) needs a nickname, not an empty string", command: command) }
        if let problem = Validation.nicknameProblem(nick) {
            throw .usage("the nickname '\(nick)' \(problem)", command: command)
        }
        return nick
    }
}

extension Option where Value == String {
    /// `--name DEVICE`: a device's name as `device list` shows it (1-64 bytes, one line).
    static func deviceName(_ help: String) -> Option {
        Option.value("name", "DEVICE", help) { text, command throws(CLIError) in
            if let problem = DeviceCertificate.nameProblem(text) { throw CLIError.usage("--name: \(problem)", command: command) }
            return text
        }
    }

    /// An option whose value is a nickname (`Lookup.nickname`: trimmed, no spaces or '#').
    static func nickname(_ name: String, _ valueName: String, _ help: String) -> Option {
        Option.value(name, valueName, help) { text, command throws(CLIError) in try Lookup.nickname(text, option: name, command: command) }
    }
}
