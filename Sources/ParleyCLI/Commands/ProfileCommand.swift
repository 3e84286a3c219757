import Identity
import JSONViews
import Presentation
import Replica
import Store

/// `parley profile`: your entry in the directory (RChat's profile): nickname, display name,
/// status text, presence mode and avatar. Each field is its own register, so setting one
/// leaves the others as they are.
struct ProfileCommand: Command {
    let name = "profile"
    let summary = "show your profile, or set its display name, status, presence or avatar"
    let usage = ["profile [--display-name NAME] [--status TEXT] [--presence online|away|hidden] [--avatar FILE] [--nick NAME] [--json]"]
    static let displayName = Option.value("display-name", "NAME", "your full name as others see it (\"\" clears it)")
    static let status = Option.value("status", "TEXT", "a short status line, e.g. \"in the lab until 5\" (\"\" clears it)")
    static let presence = Option.value("presence", "MODE", "online, away or hidden") { value, command throws(CLIError) in
        guard let mode = PresenceMode.allCases.first(where: { $0.description == value.trimmingWhitespace().lowercased() }) else {
            throw CLIError.usage("--presence must be online, away or hidden, not '\(value)'", command: command)
        }
        return mode
    }
    static let nick = Option<String>.nickname("nick", "NAME", "your nickname (as `parley init --nick`)")
    static let avatar = Option.value("avatar", "FILE", "a profile photo (at most 8 MiB)")
    static let json = Flag.flag("json", "print one JSON array with one object: id, nick, display_name, status, presence, avatar")
    let options = [Self.displayName.spec, Self.status.spec, Self.presence.spec, Self.nick.spec, Self.avatar.spec, Self.json.spec]
    let details = [
        "Without options it shows your profile; with options it changes those fields and then shows the result.",
        "--avatar records the file's name, size, type and hash in your directory entry and keeps its content on this node; "
            + "peers fetch the picture by its hash from a running node.",
    ]
    let examples = ["profile", "profile --display-name \"Alice Liddell\" --status \"at the tea party\"", "profile --presence away"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        let avatarFile = try arguments.value(Self.avatar).map { path throws(CLIError) in try FileInput.read(path, option: "avatar") }
        let presence = try arguments.value(Self.presence)
        let nick = try arguments.value(Self.nick)
        let displayName = try arguments.value(Self.displayName).map { $0.trimmingWhitespace() }
        let status = try arguments.value(Self.status).map { $0.trimmingWhitespace() }
        let me = try context.me()
        let store = try context.store()
        let avatar = try avatarFile.map { file throws(CLIError) in
            let hash = try context.storeCall(command: name) { try store.blobs.storeBlob(file.bytes, nowMillis: context.nowMillis) }
            return Attachment(name: file.name, size: UInt64(file.bytes.count), mime: file.mime, hash: hash)
        }

        if nick != nil || displayName != nil || status != nil || presence != nil || avatar != nil {
            try context.author(
                .profile(subject: me, nick: nick, displayName: displayName, status: status, presence: presence, avatar: avatar),
                in: PartitionDescriptor.directory.id, command: name)
        }
        let profile = try context.storeCall { try store.directory.profile(me) }
        func present(_ text: String?) -> String? { text.flatMap { $0.isEmpty ? nil : $0 } }
        let fields = (
            nick: present(profile?.nick), displayName: present(profile?.displayName), status: present(profile?.status),
            presence: profile?.presence
        )
        if arguments[Self.json] {
            context.output.json([ViewJSON.profile(me, profile)])
            return 0
        }
        context.output.line(Format.person(me, nick: fields.nick))
        context.output.line("display name  \(fields.displayName.map { Format.safe($0, keepNewlines: false) } ?? "(not set)")")
        context.output.line("status        \(fields.status.map { Format.safe($0, keepNewlines: false) } ?? "(not set)")")
        context.output.line("presence      \(fields.presence?.description ?? "online (default)")")
        let avatarLine = profile?.avatar.map { "\(Format.safe($0.name, keepNewlines: false)) (\($0.mime), \(Format.byteCount($0.size)))" }
        context.output.line("avatar        \(avatarLine ?? "(not set)")")
        return 0
    }
}
