import Identity
import Replica
import Store

/// `parley profile`: your entry in the directory (RChat's profile): nickname, display name,
/// status text and presence mode. Each field is its own register, so setting one leaves the
/// others as they are.
struct ProfileCommand: Command {
    let name = "profile"
    let summary = "show your profile, or set its display name, status or presence"
    let usage = ["profile [--display-name NAME] [--status TEXT] [--presence online|away|hidden] [--nick NAME] [--json]"]
    let options: [OptionSpec] = [
        .value("display-name", "NAME", "your full name as others see it (\"\" clears it)"),
        .value("status", "TEXT", "a short status line, e.g. \"in the lab until 5\" (\"\" clears it)"),
        .value("presence", "MODE", "online, away or hidden"),
        .value("nick", "NAME", "your nickname (as `parley init --nick`)"),
        .flag("json", "print one JSON array with one object: id, nick, display_name, status, presence"),
        .value("avatar", "FILE", "(not yet supported) a profile photo"),
    ]
    let details = ["Without options it shows your profile; with options it changes those fields and then shows the result."]
    let examples = ["profile", "profile --display-name \"Alice Liddell\" --status \"at the tea party\"", "profile --presence away"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try refuseUnsupported(arguments, ["avatar"])
        try expectPositionals(arguments, 0...0, names: [])
        let presence = try arguments.value("presence").map { value throws(CLIError) in
            guard let mode = PresenceMode.allCases.first(where: { $0.description == value.trimmingWhitespace().lowercased() }) else {
                throw CLIError.usage("--presence must be online, away or hidden, not '\(value)'", command: name)
            }
            return mode
        }
        let nick = try arguments.value("nick").map { value throws(CLIError) in try Lookup.nickname(value, option: "nick", command: name) }
        let displayName = arguments.value("display-name").map { $0.trimmingWhitespace() }
        let status = arguments.value("status").map { $0.trimmingWhitespace() }
        let identity = try context.identity()

        if nick != nil || displayName != nil || status != nil || presence != nil {
            try context.author(.profile(subject: identity.id, nick: nick, displayName: displayName, status: status, presence: presence, avatar: nil),
                               in: PartitionDescriptor.directory.id, command: name)
        }
        let store = try context.store()
        let profile = try context.storeCall { try store.profile(identity.id) }
        func present(_ text: String?) -> String? { text.flatMap { $0.isEmpty ? nil : $0 } }
        let fields = (nick: present(profile?.nick), displayName: present(profile?.displayName), status: present(profile?.status),
                      presence: profile?.presence)
        if arguments.has("json") {
            context.output.json([.object([
                "id": .string(identity.id.text), "nick": .optional(fields.nick), "display_name": .optional(fields.displayName),
                "status": .optional(fields.status), "presence": .optional(fields.presence?.description),
            ])])
            return 0
        }
        context.output.line(Format.person(identity.id, nick: fields.nick))
        context.output.line("display name  \(fields.displayName ?? "(not set)")")
        context.output.line("status        \(fields.status ?? "(not set)")")
        context.output.line("presence      \(fields.presence?.description ?? "online (default)")")
        return 0
    }
}

/// `parley digest`: per partition, the digest of its op set (DESIGN §3.6). Two replicas with
/// equal digests hold the same ops, hence the same state: what convergence tests compare.
struct DigestCommand: Command {
    let name = "digest"
    let summary = "show each partition's op count and digest (compare replicas)"
    let usage = ["digest [--json]"]
    let options: [OptionSpec] = [.flag("json", "print one JSON array of {partition, kind, name, ops, authors, digest, joined}")]
    let details = ["kind is room, conversation, directory, inbox or self; name is the room name without '#', "
        + "the conversation's name, or the kind for the others."]
    let examples = ["digest", "digest --json"]

    struct Row {
        let partition: PartitionID
        let kind: PartitionKind
        let name: String
        let ops: Int
        let authors: Int
        let digest: PartitionDigest
        let joined: Bool
    }

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        _ = try context.identity()
        let store = try context.store()
        let rows: [Row] = try context.storeCall {
            try store.partitions().map { record in
                let heads = try store.heads(record.id)
                return Row(partition: record.id, kind: record.descriptor.kind, name: try Self.name(of: record.descriptor, in: store),
                           ops: try store.opCount(record.id), authors: heads.filter { $0.maxSeq > 0 }.count,
                           digest: PartitionDigest(heads: heads), joined: record.joined)
            }
        }
        if arguments.has("json") {
            context.output.json(rows.map { row in
                .object([
                    "partition": .string(row.partition.text), "kind": .string(row.kind.description), "name": .string(row.name),
                    "ops": .integer(Int64(row.ops)), "authors": .integer(Int64(row.authors)), "digest": .string(row.digest.text),
                    "joined": .bool(row.joined),
                ])
            })
            return 0
        }
        let nameWidth = max(4, rows.map(\.name.count).max() ?? 0)
        context.output.line(HelpText.padded("KIND", 12) + "  " + HelpText.padded("NAME", nameWidth) + "  " + "     OPS  AUTHORS  DIGEST")
        for row in rows {
            let ops = String(row.ops), authors = String(row.authors)
            context.output.line(HelpText.padded(row.kind.description, 12) + "  " + HelpText.padded(row.name, nameWidth) + "  "
                + String(repeating: " ", count: max(0, 8 - ops.count)) + ops + "  "
                + String(repeating: " ", count: max(0, 7 - authors.count)) + authors + "  " + String(row.digest.text.prefix(16)))
        }
        return 0
    }

    static func name(of descriptor: PartitionDescriptor, in store: ReplicaStore) throws -> String {
        switch descriptor {
        case .room(let name): name.value
        case .conversation: try store.conversation(descriptor.id)?.name ?? ""
        case .directory, .inbox, .ownData: descriptor.kind.description
        }
    }
}

/// `parley help [COMMAND]`: the same text as `--help`, for people who type it this way.
struct HelpCommand: Command {
    let name = "help"
    let summary = "show help for all commands, or for one"
    let usage = ["help [COMMAND]"]
    let options: [OptionSpec] = []
    let examples = ["help", "help send", "help task add"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        let words = arguments.positionals
        guard !words.isEmpty else {
            context.output.line(HelpText.overview())
            return 0
        }
        let wanted = words.joined(separator: " ")
        if let command = CommandRegistry.command(named: wanted) {
            context.output.line(HelpText.command(command))
        } else if words.count == 1, CommandRegistry.groups.contains(wanted) {
            context.output.line(HelpText.group(wanted))
        } else {
            var message = "no command called '\(wanted)'"
            if let close = closestMatch(to: wanted, in: CommandRegistry.allNames) { message += " (did you mean `parley help \(close)`?)" }
            throw CLIError.usage(message, command: nil)
        }
        return 0
    }
}
