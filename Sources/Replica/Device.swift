import Identity
import Sodium
import Wire

/// A device certificate (op type `deviceCertificate`, in the directory, docs/DESIGN.md §3.8): the
/// person `person` (their root key, the user id everyone knows) says that `device` is one of
/// theirs, so what `device` writes is theirs.
///
/// Two signatures make it, both checked by every replica from the body alone:
/// - the **device's**, over `"parley/device/v1" ‖ person ‖ device ‖ name`: a key cannot be
///   claimed as someone's device without its holder's consent;
/// - the **certifier's**, over `"parley/device-cert/v1" ‖ person ‖ device ‖ name`: the person's
///   root key or one of their devices vouches for it.
///
/// The op is authored by the certifier (pairing: the device that shows the code), so a revoked
/// certifier's later certificates fall outside its cutoff like all its writes; or by the device
/// itself when the certifier is the root key (a store recovering from a fork, whose root chain in
/// the directory may be frozen).
///
/// | off | len | field |
/// |---|---|---|
/// | 0 | 32 | person (root key) |
/// | 32 | 32 | device key |
/// | 64 | 32 | certifier (the root key or a device of the person) |
/// | 96 | 2 + n | device name (1…64 bytes, one line) |
/// | | 64 | device signature |
/// | | 64 | certifier signature |
public struct DeviceCertificate: Hashable, Sendable {
    public static let maxNameBytes = 64

    public var person: UserID
    public var device: UserID
    public var certifier: UserID
    public var name: String
    public var deviceSignature: [UInt8]
    public var certifierSignature: [UInt8]

    public init(person: UserID, device: UserID, certifier: UserID, name: String, deviceSignature: [UInt8], certifierSignature: [UInt8]) {
        (self.person, self.device, self.certifier, self.name) = (person, device, certifier, name)
        (self.deviceSignature, self.certifierSignature) = (deviceSignature, certifierSignature)
    }

    /// What the device signs to consent to being `person`'s.
    public static func deviceStatement(person: UserID, device: UserID, name: String) -> [UInt8] {
        Array("parley/device/v1".utf8) + person.publicKey + device.publicKey + Array(name.utf8)
    }

    /// What the certifier signs to vouch for the device.
    public static func certifierStatement(person: UserID, device: UserID, name: String) -> [UInt8] {
        Array("parley/device-cert/v1".utf8) + person.publicKey + device.publicKey + Array(name.utf8)
    }

    /// A certificate signed by both parties at hand (a fork recovery, or a test).
    public init(person: UserID, device: Identity, certifier: Identity, name: String) {
        self.init(
            person: person, device: device.id, certifier: certifier.id, name: name,
            deviceSignature: device.sign(Self.deviceStatement(person: person, device: device.id, name: name)),
            certifierSignature: certifier.sign(Self.certifierStatement(person: person, device: device.id, name: name)))
    }

    /// Why the certificate is not valid on its own (layout, limits, signatures), or nil.
    public var problem: String? {
        if let problem = Self.nameProblem(name) { return problem }
        if device == person { return "a device certificate names the person's own key as a device" }
        if deviceSignature.count != 64 || certifierSignature.count != 64 { return "a device certificate's signatures must be 64 bytes" }
        guard Signing.isValidSignature(deviceSignature, for: Self.deviceStatement(person: person, device: device, name: name), publicKey: device.publicKey)
        else { return "the device's signature on its certificate is not valid" }
        guard
            Signing.isValidSignature(
                certifierSignature, for: Self.certifierStatement(person: person, device: device, name: name), publicKey: certifier.publicKey)
        else { return "the certifier's signature on a device certificate is not valid" }
        return nil
    }

    /// Why `name` cannot name a device, or nil: 1…64 bytes, one line, no control characters.
    public static func nameProblem(_ name: String) -> String? {
        if name.isEmpty { return "a device name is empty" }
        if name.utf8.count > maxNameBytes { return "a device name is over \(maxNameBytes) bytes" }
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) { return "a device name must be one line of text" }
        return nil
    }

    func encode(to w: inout ByteWriter) {
        w.user(person); w.user(device); w.user(certifier); w.string16(name)
        w.raw(deviceSignature); w.raw(certifierSignature)
    }

    init(reading r: inout ByteReader) throws(WireDecodingError) {
        person = try r.user("person")
        device = try r.user("device")
        certifier = try r.user("certifier")
        name = try r.string16("device name", limit: Self.maxNameBytes)
        deviceSignature = try r.raw(64, "device signature")
        certifierSignature = try r.raw(64, "certifier signature")
    }
}

/// A device revocation (op type `deviceRevocation`, in the directory, docs/DESIGN.md §3.8): a
/// device of `person` (or their root key) says `device` is lost. Every replica then refuses the
/// device's writes past the cutoff: in each partition `cutoffs` lists, the ops above the listed
/// seq (the device's head as the revoker held it); in any other partition, the ops stamped at or
/// after `cutoffHLC`. Both are functions of the op alone, so every replica refuses the same ops
/// whatever it received first, and one that held some of them drops them.
///
/// | off | len | field |
/// |---|---|---|
/// | 0 | 32 | person |
/// | 32 | 32 | device |
/// | 64 | 8 | cutoff hlc |
/// | 72 | 2 | n: listed partitions, 0…1,024 |
/// | 74 | 40 × n | partition id (32) ‖ last kept seq (u64), partition ids increasing |
public struct DeviceRevocation: Hashable, Sendable {
    public static let maxCutoffs = 1024

    public var person: UserID
    public var device: UserID
    public var cutoffHLC: HLC
    /// The last seq kept in each listed partition.
    public var cutoffs: [PartitionID: UInt64]

    public init(person: UserID, device: UserID, cutoffHLC: HLC, cutoffs: [PartitionID: UInt64]) {
        (self.person, self.device, self.cutoffHLC, self.cutoffs) = (person, device, cutoffHLC, cutoffs)
    }

    /// Whether an op of the revoked device at (partition, seq, hlc) is past the cutoff.
    public func refuses(partition: PartitionID, seq: UInt64, hlc: HLC) -> Bool {
        if let last = cutoffs[partition] { return seq > last }
        return hlc >= cutoffHLC
    }

    func encode(to w: inout ByteWriter) {
        w.user(person); w.user(device); w.u64(cutoffHLC.raw)
        let sorted = cutoffs.sorted { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }
        w.u16(UInt16(sorted.count))
        for (partition, seq) in sorted {
            w.partitionID(partition); w.u64(seq)
        }
    }

    init(reading r: inout ByteReader) throws(WireDecodingError) {
        person = try r.user("person")
        device = try r.user("device")
        cutoffHLC = HLC(raw: try r.u64("cutoff hlc"))
        let count = Int(try r.u16("cutoff count"))
        guard count <= Self.maxCutoffs else { throw .tooLong(field: "revocation cutoffs", length: count, limit: Self.maxCutoffs) }
        guard r.remaining >= count * 40 else { throw .truncated(field: "revocation cutoffs") }
        var cutoffs: [PartitionID: UInt64] = [:]
        var previous: PartitionID?
        for _ in 0..<count {
            let partition = try r.partitionID("cutoff partition")
            if let previous, !previous.bytes.lexicographicallyPrecedes(partition.bytes) {
                throw .invalidValue(field: "revocation cutoffs must name each partition once, in increasing order")
            }
            cutoffs[partition] = try r.u64("cutoff seq")
            previous = partition
        }
        self.cutoffs = cutoffs
    }
}
