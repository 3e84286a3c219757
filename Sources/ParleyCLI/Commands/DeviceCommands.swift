import Foundation
import JSONViews
import Presentation
import Replica
import Store

/// `parley device list`: this person's devices.
struct DeviceListCommand: Command {
    let name = "device list"
    let summary = "list your devices: the first one (your identity key) and each one paired since"
    let usage = ["device list [--json]"]
    static let json = Flag.flag("json", "print a JSON array: id, name, this, first, revoked, certified_by, certified_at")
    let options = [Self.json.spec]
    let examples = ["device list", "device list --json"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        let identity = try context.identity()
        let store = try context.store()
        let person = try context.me()
        let devices = try context.storeCall { try store.devices.devices(of: person) }
        if arguments[Self.json] {
            context.output.json(devices.map { ViewJSON.device($0, this: identity.id) })
            return 0
        }
        for device in devices {
            let marks = [device.device == identity.id ? "this device" : nil, device.revoked ? "revoked" : nil].compactMap { $0 }
            context.output.line(
                "\(device.device.short)  \(Format.safe(device.name, keepNewlines: false))" + (marks.isEmpty ? "" : "  (\(marks.joined(separator: ", ")))"))
        }
        return 0
    }
}

/// `parley device revoke ID`: a lost device's later writes are refused everywhere.
struct DeviceRevokeCommand: Command {
    let name = "device revoke"
    let summary = "revoke one of your devices (a lost laptop): its later writes are refused everywhere, and your conversations rotate their keys"
    let usage = ["device revoke ID"]
    let options: [OptionSpec] = []
    let details = [
        "ID is the device's id or its first characters, as `parley device list` shows. What the device wrote up to what this "
            + "node holds of it stays; anything later is refused by every node, and every conversation you are in moves to a key "
            + "the device never gets. It cannot be undone: pair the device again to use it."
    ]
    let examples = ["device revoke k3v9q2"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 1...1, names: ["ID"])
        let identity = try context.identity()
        let store = try context.store()
        let person = try context.me()
        let prefix = arguments.positionals[0].lowercased()
        let devices = try context.storeCall { try store.devices.devices(of: person) }
        let matches = devices.filter { $0.device.text.hasPrefix(prefix) }
        guard !prefix.isEmpty, let device = matches.first else {
            throw CLIError.failure("no device of yours starts with '\(prefix)'; `parley device list` shows them")
        }
        guard matches.count == 1 else { throw CLIError.failure("'\(prefix)' names \(matches.count) devices; give more of its id") }
        if device.revoked {
            context.output.line("\(device.device.short) (\(Format.safe(device.name, keepNewlines: false))) is revoked already")
            return 0
        }
        try context.storeCall(command: name) { try store.revokeDevice(device.device, by: identity, nowMillis: context.nowMillis) }
        context.notifyNodeOfWrites()
        context.output.line(
            "revoked \(device.device.short) (\(Format.safe(device.name, keepNewlines: false))): its later writes are refused, and your conversations rotate")
        return 0
    }
}
