import Identity
import Replica
import SQLite
import Sodium
import Wire

/// Epoch keys as the store uses them (docs/DESIGN.md §3.5): taking an identity's keys (which may
/// open stored grants and rebuild views), and choosing (or making, by authoring a rotation or a
/// share) the key to write with.
extension ReplicaStore {
    /// Gives the store `identity`'s keys: grants addressed to it are opened now and whenever
    /// they arrive later, so the conversations it belongs to become readable (views are rebuilt
    /// where a new key opens ops already stored). Idempotent; `author(_:in:by:nowMillis:)`
    /// calls it for its author. A store that was never given an identity is a pure carrier.
    public func useIdentity(_ identity: Identity) throws {
        guard keys.localIdentity(identity.id) == nil else { return }
        let local = LocalIdentity(identity: identity, boxKeyPair: identity.boxKeyPair)
        keys.addLocalIdentity(local)
        try catchUpClock(withOwnOpsOf: identity.id)
        guard !isReadOnly else { return }
        // Read first: most calls find nothing to open and need no write transaction.
        let rows = try database.prepare("SELECT g.oid, g.pid, g.recipients, o.body FROM grants g JOIN ops o ON o.oid = g.oid WHERE g.for_me = 0")
            .rows { ($0.int64(0), $0.int64(1), $0.blob(2), $0.blob(3)) }
            .filter { KeyRing.unpack($0.2).contains(identity.id) }
        guard !rows.isEmpty else { return }
        try database.transaction(.immediate) {
            for (oid, pid, _, body) in rows {
                try database.cachedStatement("UPDATE grants SET for_me = 1 WHERE oid = ?").run(.integer(oid))
                keys.forgetEpochKeys(pid: pid)
                views.rebuildAtEnd(pid: pid)
                guard let descriptor = try log.descriptor(pid: pid), let record = try log.partition(descriptor.id),
                    case .keyGrant(let grant) = try? OperationBody(type: OperationType.keyGrant.rawValue, decoding: body)
                else { continue }
                try keys.learnKeys(from: grant, record: record, only: local)
            }
            try views.flushPendingRebuilds()
        }
    }

    /// The key `local` must write with in the conversation, after authoring the rotation or the
    /// shares its plan calls for. Throws `StoreError.notMember` unless it is a current member.
    /// Must run inside a transaction.
    func prepareWriteKey(_ record: PartitionRecord, by local: LocalIdentity, nowMillis: UInt64) throws -> EpochKey {
        for _ in 0..<2 {
            switch try keys.epochPlan(for: devices.person(of: local.identity.id), record: record, devices: devices) {
            case .notMember:
                throw StoreError.notMember(record.id)
            case .rotate(let epoch, let recipients):
                let key = EpochKey.generate(partition: record.id, epoch: epoch)
                try authorGrant(key, to: recipients, record: record, by: local.identity, nowMillis: nowMillis)
            case .write(_, let keyID, let shareWith):
                guard let key = try keys.epochKeys(pid: record.pid).first(where: { $0.id == keyID }) else { break }
                let reachable = shareWith.filter(\.canReceiveSealedBoxes)
                if !reachable.isEmpty { try authorGrant(key, to: reachable, record: record, by: local.identity, nowMillis: nowMillis) }
                return key
            }
        }
        throw StoreError.damaged("no epoch key to write with after a rotation")
    }

    /// Authors grants of `key` to `devices` (those with a valid key), at most
    /// `BodyLimits.members` boxes per grant.
    func authorGrant(_ key: EpochKey, to devices: [UserID], record: PartitionRecord, by identity: Identity, nowMillis: UInt64) throws {
        let sealable = Array(Set(devices.filter(\.canReceiveSealedBoxes))).sorted()
        for start in stride(from: 0, to: sealable.count, by: BodyLimits.members) {
            let grant = try KeyGrant(granting: key, to: Array(sealable[start..<min(start + BodyLimits.members, sealable.count)]))
            try signAndApply(.keyGrant, flags: [], body: OperationBody.keyGrant(grant).encoded, record: record, by: identity, nowMillis: nowMillis)
        }
    }
}
