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
                        from = try database.cachedStatement("SELECT min(seq) FROM ops WHERE pid = ? AND aid = ? AND hlc >= ?").firstRow(
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
