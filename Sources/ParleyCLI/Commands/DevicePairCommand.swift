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
    static let minutes = Option.value("minutes", "N", "how long the code stays good (1-60, default 10)") { text, command throws(CLIError) in
        guard let minutes = Int(text), (1...60).contains(minutes) else { throw CLIError.usage("--minutes needs a whole number from 1 to 60", command: command) }
        return minutes
    }
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
        let targets = try beaconTargets(context, arguments)
        let minutes = try arguments.value(Self.minutes) ?? 10
        let host: PairingHost
        do {
            host = try PairingHost(code: .generate(), beaconTargets: targets, expiry: .seconds(minutes * 60))
        } catch {
            throw CLIError.failure(error.description)
        }
        let address = Self.address(for: targets).map { HostPort(host: $0, port: host.port) }
        let invitation = PairingInvitation(code: host.code, address: address)
        context.output.line(host.code.formatted)
        if let address { context.output.line("or, where beacons do not reach: parley init --pair \(host.code.formatted)@\(address)") }
        if !arguments[Self.noQR], context.output.outputIsTerminal, let symbol = try? QRSymbol(encoding: invitation.uri) {
            for line in symbol.terminalLines() { context.output.line(line) }
        }
        context.output.line("waiting for the new device (up to \(minutes) min); on it run: parley init --pair \(host.code.formatted)")
        context.output.flush()
        var paired: DeviceRequest?
        do {
            try host.run(
                welcome: DevicePairing.welcome(person: person),
                answer: { bytes in
                    let request = try DevicePairing.request(decoding: bytes)
                    try store.certifyDevice(request, by: identity, nowMillis: context.nowMillis)
                    paired = request
                    return try DevicePairing.bundle(for: request.device, person: person, store: store)
                },
                finished: { _ in })
        } catch let error as PairingError {
            throw CLIError.failure(error.description)
        }
        context.notifyNodeOfWrites()
        guard let paired else { return 1 }
        context.output.line("paired \(paired.name) (\(paired.device.text)): it writes as \(Format.person(person, nick: try context.nick(of: person)))")
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

    /// The address a new device reaches this one at, for the beacon targets: loopback for the
    /// loopback broadcast, else the first interface whose broadcast is a target.
    static func address(for targets: [String]) -> String? {
        if targets.allSatisfy({ $0.hasPrefix("127.") }) { return "127.0.0.1" }
        let interfaces = (try? NetworkInterfaces.list()) ?? []
        return interfaces.first { $0.isUp && !$0.isLoopback && $0.directedBroadcast.map(targets.contains) == true }?.address
    }
}

/// The four messages of a pairing (docs/DESIGN.md §3.8): the welcome names the person; the
/// request is the new device's key, name and consent; the bundle carries the certificate with the
/// person's directory ops and what the device joins; `done` is empty.
enum DevicePairing {
    static let magic = Array("PRLYDEV1".utf8)

    static func welcome(person: UserID) -> [UInt8] { magic + person.publicKey }

    static func person(decodingWelcome bytes: [UInt8]) throws -> UserID {
        guard bytes.count == 40, Array(bytes.prefix(8)) == magic, let person = UserID(publicKey: bytes.suffix(32)) else {
            throw CLIError.failure("the other device does not speak this version's pairing; update both to the same version")
        }
        return person
    }

    static func request(_ request: DeviceRequest) -> [UInt8] {
        var w = ByteWriter()
        w.raw(request.device.publicKey); w.string16(request.name); w.raw(request.signature)
        return w.bytes
    }

    static func request(decoding bytes: [UInt8]) throws -> DeviceRequest {
        var r = ByteReader(bytes)
        guard let device = UserID(publicKey: try r.raw(32, "device")) else { throw CLIError.failure("the new device sent a malformed key") }
        let name = try r.string16("device name", limit: DeviceCertificate.maxNameBytes)
        let signature = try r.raw(64, "signature")
        try r.expectEnd()
        return DeviceRequest(device: device, name: name, signature: signature)
    }

    /// What a new device needs from the store to start: the directory ops of the person and
    /// their devices (with the certificate just written), the public rooms and conversations to
    /// join, and the private rooms' keys (the conversations' keys travel as grants).
    static func bundle(for device: UserID, person: UserID, store: ReplicaStore) throws -> [UInt8] {
        var w = ByteWriter()
        let family = Set(try store.devices.deviceKeys(of: person, includingRevoked: true))
        let directory = try store.log.allOps(in: PartitionDescriptor.directory.id).filter { family.contains($0.author) }
        w.u32(UInt32(directory.count))
        for op in directory {
            let bytes = op.encoded
            w.u32(UInt32(bytes.count)); w.raw(bytes)
        }
        let records = try store.log.partitions().filter(\.joined)
        let joinable = records.filter { [.room, .conversation].contains($0.descriptor.kind) }
        w.u32(UInt32(joinable.count))
        for record in joinable {
            let bytes = record.descriptor.encoded
            w.u16(UInt16(bytes.count)); w.raw(bytes)
        }
        let rooms = try store.privateRoomKeys()
        w.u32(UInt32(rooms.count))
        for keys in rooms {
            w.string16(keys.name.value); w.raw(keys.roomKey.seed.bytes); w.raw(keys.contentKey.bytes)
        }
        return w.bytes
    }

    /// What `bundle` carries, decoded.
    struct Bundle {
        var directory: [Replica.Operation] = []
        var partitions: [PartitionDescriptor] = []
        var privateRooms: [PrivateRoomKeys] = []
    }

    static func bundle(decoding bytes: [UInt8]) throws -> Bundle {
        var r = ByteReader(bytes)
        var bundle = Bundle()
        for _ in 0..<Int(try r.u32("op count")) {
            let length = Int(try r.u32("op length"))
            bundle.directory.append(try Replica.Operation(encoded: try r.raw(length, "op")))
        }
        for _ in 0..<Int(try r.u32("partition count")) {
            let length = Int(try r.u16("descriptor length"))
            bundle.partitions.append(try PartitionDescriptor(decoding: try r.raw(length, "descriptor")))
        }
        for _ in 0..<Int(try r.u32("private room count")) {
            let name = try r.string16("room name", limit: 64)
            guard let room = RoomName(name) else { throw CLIError.failure("the other device sent a private room with a bad name") }
            bundle.privateRooms.append(PrivateRoomKeys(name: room, seed: try r.raw(32, "room seed"), contentKey: try r.raw(32, "content key")))
        }
        try r.expectEnd()
        return bundle
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
