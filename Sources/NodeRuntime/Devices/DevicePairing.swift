import Identity
import Replica
import Store
import Wire

/// The four messages of a pairing (docs/DESIGN.md §3.8): the welcome names the person; the
/// request is the new device's key, name and consent; the bundle carries the certificate with the
/// person's directory ops and what the device joins; `done` is empty.
public enum DevicePairing {
    static let magic = Array("PRLYDEV1".utf8)

    public static func welcome(person: UserID) -> [UInt8] { magic + person.publicKey }

    public static func person(decodingWelcome bytes: [UInt8]) throws -> UserID {
        guard bytes.count == 40, Array(bytes.prefix(8)) == magic, let person = UserID(publicKey: bytes.suffix(32)) else {
            throw DevicePairingError("the other device does not speak this version's pairing; update both to the same version")
        }
        return person
    }

    public static func request(_ request: DeviceRequest) -> [UInt8] {
        var w = ByteWriter()
        w.raw(request.device.publicKey); w.string16(request.name); w.raw(request.signature)
        return w.bytes
    }

    public static func request(decoding bytes: [UInt8]) throws -> DeviceRequest {
        var r = ByteReader(bytes)
        guard let device = UserID(publicKey: try r.raw(32, "device")) else { throw DevicePairingError("the new device sent a malformed key") }
        let name = try r.string16("device name", limit: DeviceCertificate.maxNameBytes)
        let signature = try r.raw(64, "signature")
        try r.expectEnd()
        return DeviceRequest(device: device, name: name, signature: signature)
    }

    /// What a new device needs from the store to start: the directory ops of the person and
    /// their devices (with the certificate just written), the public rooms and conversations to
    /// join, and the private rooms' keys (the conversations' keys travel as grants).
    public static func bundle(for device: UserID, person: UserID, store: ReplicaStore) throws -> [UInt8] {
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
    public struct Bundle: Sendable {
        public var directory: [Replica.Operation] = []
        public var partitions: [PartitionDescriptor] = []
        public var privateRooms: [PrivateRoomKeys] = []
    }

    public static func bundle(decoding bytes: [UInt8]) throws -> Bundle {
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
            guard let room = RoomName(name) else { throw DevicePairingError("the other device sent a private room with a bad name") }
            bundle.privateRooms.append(PrivateRoomKeys(name: room, seed: try r.raw(32, "room seed"), contentKey: try r.raw(32, "content key")))
        }
        try r.expectEnd()
        return bundle
    }
}

/// A pairing message that does not decode: the other device runs another version, or is not
/// an honest device of this person.
public struct DevicePairingError: Error, CustomStringConvertible, Sendable, Equatable {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
