import Identity
import Replica
import SQLite
import Wire

/// Devices in the apply path (docs/DESIGN.md §3.8): the rules that need the certificates, and
/// cutting a revoked device's chains at the cutoff.
extension ReplicaStore {
    /// Rules that depend on who is whose: a profile or a `self` partition written by the person
    /// or one of their devices; a certificate vouched for by the person or one of their devices
    /// (and, when the person's own key certifies and the device writes it, that key not revoked
    /// before it); a revocation written by the person or one of their devices. A certificate that
    /// has not arrived yet may still come, so each of these may resolve later.
    func deviceViolation(_ op: Operation, checked: CheckedBody, record: PartitionRecord, aid: Int64?) throws -> RuleViolation? {
        func writes(for person: UserID) throws -> Bool {
            if op.author == person { return true }
            guard let aid, let personAID = try log.existingAuthorID(person) else { return false }
            return try devices.writes(for: personAID, aid: aid)
        }
        switch (record.descriptor, checked) {
        case (.directory, .plain(.profile(let subject, _, _, _, _, _))):
            return try writes(for: subject) ? nil : .notOwnProfile
        case (.ownData(let owner), _):
            return try writes(for: owner) ? nil : .notOwner
        case (.directory, .plain(.deviceCertificate(let certificate))):
            if certificate.certifier != certificate.person {
                guard let certifier = try log.existingAuthorID(certificate.certifier), let person = try log.existingAuthorID(certificate.person),
                    try devices.writes(for: person, aid: certifier)
                else { return .unknownDevice }
            }
            // Written by the device on the person key's word: that key must not be cut off then.
            if op.author == certificate.device, let personAID = try log.existingAuthorID(certificate.person),
                try devices.revocations(of: personAID).contains(where: { op.hlc >= $0.cutoffHLC })
            {
                return .deviceRevoked
            }
            return nil
        case (.directory, .plain(.deviceRevocation(let revocation))):
            return try writes(for: revocation.person) ? nil : .unknownDevice
        default:
            return nil
        }
    }

    /// Cuts the chains of devices whose revocations changed in this transaction at their
    /// cutoffs, in every partition: what the device wrote past the cutoff leaves this replica
    /// as it never enters others (`Devices.refuses`). The chains are not frozen: the cut is a
    /// function of each op, so replicas agree without a proof.
    func cutRevokedChains() throws {
        var done = Set<Int64>()
        var pending = devices.takeRevokedDevices()
        while let device = pending.first {
            pending.remove(device)
            done.insert(device)
            let revocations = try devices.revocations(of: device)
            guard !revocations.isEmpty else { continue }
            let heads = try database.cachedStatement("SELECT pid, max_seq FROM heads WHERE aid = ? AND max_seq > 0").rows(.integer(device)) {
                ($0.int64(0), UInt64($0.int64(1)))
            }
            for (pid, maxSeq) in heads {
                guard let descriptor = try log.descriptor(pid: pid), let record = try log.partition(descriptor.id) else { continue }
                var cut: UInt64?
                for revocation in revocations {
                    let from: UInt64?
                    if let last = revocation.cutoffs[record.id] {
                        from = last < maxSeq ? last + 1 : nil
                    } else {
                        from =
                            try database.cachedStatement("SELECT min(seq) FROM ops WHERE pid = ? AND aid = ? AND hlc >= ?").firstRow(
                                .integer(pid), .integer(device), .integer(Int64(bitPattern: revocation.cutoffHLC.raw))
                            ) { $0.isNull(0) ? nil : UInt64($0.int64(0)) } ?? nil
                    }
                    if let from { cut = min(cut ?? from, from) }
                }
                if let cut { try forks.discardChain(record: record, aid: device, from: cut) }
            }
            pending.formUnion(devices.takeRevokedDevices().subtracting(done))
        }
    }
}

/// Writing device certificates and revocations, and handing a new device what it needs to read.
extension ReplicaStore {
    /// Certifies `request.device` as a device of the person `certifier` writes for, in the
    /// directory, then grants the new device every epoch key this node holds in the
    /// conversations the person is in, so their history opens there too. Throws
    /// `StoreError.invalidInput` when the device's consent does not verify.
    @discardableResult
    public func certifyDevice(_ request: DeviceRequest, by certifier: Identity, nowMillis: UInt64) throws -> Operation {
        try useIdentity(certifier)
        let person = try devices.person(of: certifier.id)
        let certificate = DeviceCertificate(
            person: person, device: request.device, certifier: certifier.id, name: request.name, deviceSignature: request.signature,
            certifierSignature: certifier.sign(DeviceCertificate.certifierStatement(person: person, device: request.device, name: request.name)))
        if let problem = certificate.problem { throw StoreError.invalidInput(problem) }
        return try database.transaction(.immediate, durable: true) {
            let op = try author(.deviceCertificate(certificate), in: PartitionDescriptor.directory.id, by: certifier, nowMillis: nowMillis)
            try shareKeys(with: request.device, person: person, by: certifier, nowMillis: nowMillis)
            return op
        }
    }

    /// Makes `device` a device of `person` on the person key's word, the certificate written by
    /// the device itself: how a store whose person key forked goes on writing (docs/DESIGN.md
    /// §3.8, "Recovering a forked store"). The person key's forked chains stay frozen at their
    /// forks with their proofs; the device grants itself every epoch key held here in the
    /// person's conversations, so rotations and history go on. Does nothing when `device` is
    /// already the person's.
    public func certifyDeviceAfterFork(_ device: Identity, name: String, person: Identity, nowMillis: UInt64) throws {
        try useIdentity(device)
        guard try devices.person(of: device.id) != person.id else { return }
        let certificate = DeviceCertificate(person: person.id, device: device, certifier: person, name: name)
        if let problem = certificate.problem { throw StoreError.invalidInput(problem) }
        try database.transaction(.immediate, durable: true) {
            try author(.deviceCertificate(certificate), in: PartitionDescriptor.directory.id, by: device, nowMillis: nowMillis)
            try shareKeys(with: device.id, person: person.id, by: device, nowMillis: nowMillis)
        }
    }

    /// Grants `device` every epoch key held in each joined conversation `person` is a current member of.
    private func shareKeys(with device: UserID, person: UserID, by identity: Identity, nowMillis: UInt64) throws {
        for record in try log.partitions() where record.joined && record.descriptor.kind == .conversation {
            guard try keys.membershipState(pid: record.pid).current.contains(person) else { continue }
            for key in try keys.epochKeys(pid: record.pid) {
                try authorGrant(key, to: [device], record: record, by: identity, nowMillis: nowMillis)
            }
        }
    }

    /// Revokes `device`, one of the person's devices other than the one writing, for everyone:
    /// its ops past the cutoff — in each partition this node holds, its head here; elsewhere,
    /// anything stamped from now on — are refused on every replica, and every conversation the
    /// person is in rotates to a key the device never gets.
    @discardableResult
    public func revokeDevice(_ device: UserID, by identity: Identity, nowMillis: UInt64) throws -> Operation {
        try useIdentity(identity)
        let person = try devices.person(of: identity.id)
        guard device != identity.id else {
            throw StoreError.invalidInput("that is this device; revoke it from another of your devices, or wipe it with `parley wipe`")
        }
        guard try devices.deviceKeys(of: person, includingRevoked: true).contains(device) else {
            throw StoreError.invalidInput("\(device.text) is not one of your devices; `parley device list` shows them")
        }
        return try database.transaction(.immediate, durable: true) {
            var cutoffs: [PartitionID: UInt64] = [:]
            if let aid = try log.existingAuthorID(device) {
                let heads = try database.cachedStatement(
                    "SELECT p.id, h.max_seq FROM heads h JOIN partitions p ON p.pid = h.pid WHERE h.aid = ? AND h.max_seq > 0 ORDER BY h.max_seq DESC"
                ).rows(.integer(aid)) { (PartitionID(bytes: $0.blob(0)), UInt64($0.int64(1))) }
                for case let (partition?, seq) in heads.prefix(DeviceRevocation.maxCutoffs) { cutoffs[partition] = seq }
            }
            let cutoffHLC = max(HLC(wallMillis: nowMillis, counter: 0), clock.last)
            let revocation = DeviceRevocation(person: person, device: device, cutoffHLC: cutoffHLC, cutoffs: cutoffs)
            let op = try author(.deviceRevocation(revocation), in: PartitionDescriptor.directory.id, by: identity, nowMillis: nowMillis)
            // The required epoch of every conversation the person was ever in went up by one.
            guard let local = keys.localIdentity(identity.id) else { return op }
            for record in try log.partitions() where record.joined && record.descriptor.kind == .conversation {
                guard try keys.membershipState(pid: record.pid).current.contains(person) else { continue }
                _ = try prepareWriteKey(record, by: local, nowMillis: nowMillis)
            }
            try views.flushPendingRebuilds()
            return op
        }
    }
}

/// What a new device asks the device that pairs it for (`parley init --pair`): its key, its
/// name, and its consent to being the person's, signed (docs/DESIGN.md §3.8).
public struct DeviceRequest: Hashable, Sendable {
    public var device: UserID
    public var name: String
    public var signature: [UInt8]

    public init(device: UserID, name: String, signature: [UInt8]) { (self.device, self.name, self.signature) = (device, name, signature) }

    /// The request of `device` to become a device of `person`.
    public init(person: UserID, device: Identity, name: String) {
        self.init(device: device.id, name: name, signature: device.sign(DeviceCertificate.deviceStatement(person: person, device: device.id, name: name)))
    }
}
