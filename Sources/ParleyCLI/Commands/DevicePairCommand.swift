import Foundation
import Identity
import NodeRuntime
import Pairing
import Presentation
import QRCode
import Replica
import Store
import Transport
import Wire

/// `parley device pair`: makes a new device of this person (docs/DESIGN.md §3.8, §4.4). Prints a
/// pairing code on its first line, then waits for `parley init --pair CODE` on the new device.
struct DevicePairCommand: Command {
    let name = "device pair"
    let summary = "pair a new device of yours: print a code for `parley init --pair CODE` on it, and wait"
    let usage = ["device pair [--broadcast ADDR[,...]] [--minutes N] [--no-qr]"]
    static let broadcast = Option.value(
        "broadcast", "ADDR[,...]", "where the pairing beacon goes (default: as `run`: $PARLEY_BROADCAST, else every interface's)")
    static let minutes = Option.value(
        "minutes", "N",
        "how long the code stays good (\(range.lowerBound)-\(range.upperBound), default \(DevicePairingOffer.defaultMinutes))"
    ) { text, command throws(CLIError) in
        guard let minutes = Int(text), range.contains(minutes) else {
            throw CLIError.usage("--minutes needs a whole number from \(range.lowerBound) to \(range.upperBound)", command: command)
        }
        return minutes
    }
    private static var range: ClosedRange<Int> { DevicePairingOffer.minutesRange }
    static let noQR = Flag.flag("no-qr", "do not draw the QR code")
    let options = [Self.broadcast.spec, Self.minutes.spec, Self.noQR.spec]
    let details = [
        "The first line is the pairing code (xxxxx-xxxxx); on the new device run `parley init --pair CODE` on the same network "
            + "(or `parley init --pair CODE@HOST:PORT`, printed next, where beacons do not reach). A QR code of the same follows "
            + "on a terminal. The code is good once, for --minutes, and three wrong tries end it.",
        "The new device gets its own key, certified by this one: it writes as you, with its own chains (two devices writing "
            + "at once never fork), it can read your conversations and private rooms, and `parley device revoke` ends it.",
    ]
    let examples = ["device pair", "device pair --broadcast 127.255.255.255 --minutes 2"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        let identity = try context.identity()
        let store = try context.store()
        let person = try context.me()
        let minutes = try arguments.value(Self.minutes) ?? DevicePairingOffer.defaultMinutes
        let targets = try beaconTargets(context, arguments)
        let offer: DevicePairingOffer
        do {
            // The answer runs on this thread (`offer.run()` below), where the command's store lives.
            nonisolated(unsafe) let (store, context) = (store, context)
            offer = try DevicePairingOffer(person: person, beaconTargets: targets, minutes: minutes, nowMillis: context.nowMillis) { request in
                try store.certifyDevice(request, by: identity, nowMillis: context.nowMillis)
                return try DevicePairing.bundle(for: request.device, person: person, store: store)
            }
        } catch {
            throw CLIError.failure(error.description)
        }
        context.output.line(offer.code.formatted)
        if let address = offer.invitation.address {
            context.output.line("or, where beacons do not reach: parley init --pair \(offer.code.formatted)@\(address)")
        }
        if !arguments[Self.noQR], context.output.outputIsTerminal, let symbol = try? QRSymbol(encoding: offer.invitation.uri) {
            for line in symbol.terminalLines() { context.output.line(line) }
        }
        context.output.line("waiting for the new device (up to \(minutes) min); on it run: parley init --pair \(offer.code.formatted)")
        context.output.flush()
        let outcome = offer.run()
        context.notifyNodeOfWrites()
        guard case .paired(let device, let name) = outcome else {
            if case .failed(let why) = outcome { throw CLIError.failure(why) }
            return 1
        }
        context.output.line("paired \(name) (\(device.text)): it writes as \(Format.person(person, nick: try context.nick(of: person)))")
        return 0
    }

    private func beaconTargets(_ context: Context, _ arguments: ParsedArguments) throws(CLIError) -> [String] {
        var configuration = NodeConfiguration(dataDirectory: try context.dataDirectory().path)
        let option = try arguments.value(Self.broadcast)
        do throws(NodeConfiguration.OptionError) {
            try configuration.setBroadcast(option: option, environment: context.environment)
        } catch {
            throw CLIError.usage(error.description, command: name)
        }
        return configuration.broadcastTargets ?? NodeConfiguration.defaultBroadcastTargets()
    }
}

/// `parley init --pair CODE`: the new device's side of a pairing.
extension Context {
    /// Makes this data directory a new device of the person whose device shows `invitation`'s
    /// code: a fresh key (written only once the pairing succeeded), certified by that device; the
    /// person's directory entries, rooms, conversations and private rooms from the bundle.
    /// Returns the person and the new device's identity.
    func pairNewDevice(_ invitation: PairingInvitation, name: String, command: String) throws -> (person: UserID, device: Identity) {
        let directory = try dataDirectory()
        if directory.hasKeyFile {
            throw CLIError.failure(
                "\(directory.path) has an identity already; a paired device starts in a new data directory: "
                    + "run `parley --data-dir NEW_DIR init --pair CODE`")
        }
        let passphrase = try passphrase()
        let device = Identity()
        var person: UserID?
        try PairingGuest(invitation: invitation).run(
            request: { welcome in
                let owner = try DevicePairing.person(decodingWelcome: welcome)
                person = owner
                return DevicePairing.request(DeviceRequest(person: owner, device: device, name: name))
            },
            done: { bytes in
                guard let person else { throw CLIError.failure("the other device sent its bundle before its welcome") }
                let bundle = try DevicePairing.bundle(decoding: bytes)
                try directory.create()
                do throws(KeyFileError) {
                    try KeyFile.create(at: directory.keyPath, passphrase: passphrase, identity: device)
                } catch {
                    throw ErrorReport.keyFileError(error)
                }
                adopt(device)
                try setUpPairedStore(bundle, person: person, device: device)
                return []
            })
        guard let person else { throw CLIError.failure("the pairing ended before the other device said who it is") }
        return (person, device)
    }

    /// Applies a pairing bundle to this data directory's new store and joins what it names.
    private func setUpPairedStore(_ bundle: DevicePairing.Bundle, person: UserID, device: Identity) throws {
        let store = try store()
        try storeCall {
            _ = try store.apply(bundle.directory, nowMillis: nowMillis)
            guard try store.devices.person(of: device.id) == person else {
                throw CLIError.failure("the other device's bundle does not certify this device; run `parley device pair` there again")
            }
            for descriptor in bundle.partitions { try store.log.ensurePartition(descriptor, joined: true) }
            try store.log.ensurePartition(.ownData(owner: person), joined: true)
            try store.log.ensurePartition(.inbox(owner: person), joined: true)
            for keys in bundle.privateRooms { try store.joinPrivateRoom(keys) }
            try store.useIdentity(device)
            try store.setSetting(Self.initializedSetting, .integer(1))
        }
    }
}
