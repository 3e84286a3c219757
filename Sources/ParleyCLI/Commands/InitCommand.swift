import Foundation
import Identity
import Pairing
import Presentation
import Replica
import Store

/// `parley init`: the first command anyone runs (TinyChat's "pick a nickname" screen).
///
/// Safe to run again: an existing key is loaded, never replaced, so a script may call it
/// unconditionally to learn the user id.
struct InitCommand: Command {
    let name = "init"
    let summary = "create your identity (never overwrites one), join #lobby, print your user id"
    let usage = ["init [--nick NAME]", "init --pair CODE [--name DEVICE]"]
    static let nick = Option<String>.nickname("nick", "NAME", "set your nickname, shown to others as NAME#xxxxxx (no spaces or '#')")
    static let pair = Option.value("pair", "CODE", "make this a new device of yours: CODE is what `parley device pair` prints on another") {
        text, command throws(CLIError) in
        do {
            return try PairingInvitation(parsing: text)
        } catch {
            throw CLIError.usage("--pair \(text): \(error)", command: command)
        }
    }
    static let deviceName = Option<String>.deviceName("with --pair: this device's name in `device list` (default: the host name)")
    let options = [Self.nick.spec, Self.pair.spec, Self.deviceName.spec]
    let details = [
        "Creates the data directory (mode 0700) and the key file identity.key (mode 0600) if they are absent, "
            + "then prints your user id (52 characters) on stdout. An existing identity is kept as it is. "
            + "A new identity joins #lobby, the room everyone shares.",
        "With --passphrase-file FILE (or $PARLEY_PASSPHRASE) a new key is protected by that passphrase; "
            + "later commands then need the same passphrase.",
        "With --pair CODE, in a new data directory, this becomes another device of the person whose device runs "
            + "`parley device pair` on the same network: a key of its own, certified there, with your rooms, conversations "
            + "and private rooms. It prints your user id, as on the first device.",
    ]
    let examples = [
        "init --nick alice", "--data-dir ~/.parley-laptop init --pair k3v9q-2mx7d --name laptop", "--data-dir /tmp/bob init --nick bob",
        "init --nick carol --passphrase-file ~/.parley-pass",
    ]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        // Check every input before creating anything.
        let nick = try arguments.value(Self.nick)
        if let invitation = try arguments.value(Self.pair) {
            return try pairDevice(context, invitation, name: try arguments.value(Self.deviceName) ?? Self.defaultDeviceName, nick: nick)
        }
        if try arguments.value(Self.deviceName) != nil { throw CLIError.usage("--name names a paired device: use it with --pair CODE", command: name) }
        let (identity, created) = try context.setUpIdentity(nick: nick, command: name)
        let directory = try context.dataDirectory()

        context.output.line(identity.id.text)
        if context.output.errorIsTerminal {
            let who = Format.person(identity.id, nick: try context.nick(of: identity.id))
            context.output.errorLine(
                created
                    ? "Created a new identity in \(directory.path); you are \(who). Say hello: parley send --room lobby hello"
                    : "Your identity in \(directory.path) is kept; you are \(who).")
        }
        return 0
    }

    /// The host name, cut to a device name's length: what `device list` shows by default.
    static var defaultDeviceName: String {
        var name = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? ""
        while name.utf8.count > DeviceCertificate.maxNameBytes { name.removeLast() }
        return DeviceCertificate.nameProblem(name) == nil ? name : "device"
    }

    private func pairDevice(_ context: Context, _ invitation: PairingInvitation, name deviceName: String, nick: String?) throws -> Int32 {
        let (person, device) = try context.pairNewDevice(invitation, name: deviceName, command: name)
        if let nick, try context.nick(of: person) != nick {
            try context.author(
                .profile(subject: person, nick: nick, displayName: nil, status: nil, presence: nil, avatar: nil),
                in: PartitionDescriptor.directory.id, command: name)
        }
        context.output.line(person.text)
        context.output.errorLine(
            "Paired: this device (\(Format.safe(deviceName, keepNewlines: false)), \(device.id.short)) writes as "
                + "\(Format.person(person, nick: try context.nick(of: person))). Start it with `parley run`.")
        return 0
    }
}

extension Context {
    /// The setting that records that this store was set up (the lobby joined once).
    static let initializedSetting = "cli.initialized"

    /// What `init` does, shared with the chat's login screen: creates the data directory and the
    /// identity if absent (an existing key is loaded, never replaced), joins #lobby and the
    /// user's own partitions once, and sets `nick` when given and different. Returns the
    /// identity and whether it was created now.
    @discardableResult
    func setUpIdentity(nick: String?, command: String) throws(CLIError) -> (identity: Identity, created: Bool) {
        let passphrase = try passphrase()
        let directory = try dataDirectory()
        try directory.create()

        let identity: Identity
        let created: Bool
        do {
            (identity, created) = try KeyFile.loadOrCreate(at: directory.keyPath, passphrase: passphrase)
        } catch {
            throw ErrorReport.keyFileError(error)
        }
        adopt(identity)

        let store = try store()
        try storeCall {
            if try store.setting(Self.initializedSetting) == nil {
                try store.log.ensurePartition(.room(RoomName("lobby")!), joined: true)
                try store.log.ensurePartition(.ownData(owner: identity.id), joined: true)
                try store.log.ensurePartition(.inbox(owner: identity.id), joined: true)
                try store.setSetting(Self.initializedSetting, .integer(1))
            }
        }
        if let nick, try self.nick(of: identity.id) != nick {
            try author(
                .profile(subject: identity.id, nick: nick, displayName: nil, status: nil, presence: nil, avatar: nil),
                in: PartitionDescriptor.directory.id, command: command)
        }
        return (identity, created)
    }
}

/// `parley whoami`: who this data directory speaks as.
struct WhoamiCommand: Command {
    let name = "whoami"
    let summary = "show your user id, nickname and data directory"
    let usage = ["whoami [--json]"]
    static let json = Flag.flag("json", "print one JSON array with one object: id, nick, short, display, data_dir")
    let options = [Self.json.spec]
    let examples = ["whoami", "whoami --json"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        let identity = try context.identity()
        let me = try context.me()
        let nick = try context.nick(of: me)
        let directory = try context.dataDirectory()
        let display = Format.person(me, nick: nick)
        if arguments[Self.json] {
            context.output.json([
                .object([
                    "id": .string(me.text), "nick": .optional(nick), "short": .string(me.short),
                    "display": .string(display), "data_dir": .string(directory.path), "device": .string(identity.id.text),
                ])
            ])
        } else {
            context.output.line(display)
            context.output.line("user id   \(me.text)")
            if me != identity.id { context.output.line("device    \(identity.id.text)") }
            context.output.line("nick      \(nick ?? "(none; set one with `parley profile --nick NAME`)")")
            context.output.line("data dir  \(directory.path)")
        }
        return 0
    }
}
