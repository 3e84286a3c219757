import Identity
import Replica
import SQLite
import Wire

/// One device of a person, as `device list` shows it.
public struct DeviceView: Hashable, Sendable {
    /// The device's key: the author of its ops and its node's identity on links.
    public var device: UserID
    public var person: UserID
    /// Its name ("laptop"); the person's own key, which has no certificate, is "first device".
    public var name: String
    /// Who vouched for it (the person's key or another device); nil for the person's own key.
    public var certifier: UserID?
    /// When it was certified (nil for the person's own key).
    public var certifiedAt: HLC?
    /// Whether a revocation of it takes effect.
    public var revoked: Bool
    /// Whether this is the person's own key (the identity that was created first).
    public var isPersonKey: Bool { device == person }
}

/// Devices (docs/DESIGN.md §3.8): which keys are devices of which person, from the directory's
/// certificates (`devices`), and which revocations take effect (`device_revocations`). Both
/// tables are views of the directory partition, rebuilt with it.
///
/// A person is their root key (the user id everyone knows); a device is a key certified for
/// them, writing chains of its own, so two devices writing at once never fork. Everything that
/// asks "whose is this op" (a profile's subject, a `self` partition's owner, conversation
/// membership, the author shown with a message) goes through `personAID(of:)`.
///
/// Owns two caches, dropped whenever the tables change and on rollback. Not thread-safe: its
/// store's one owner uses it.
public final class Devices {
    let database: Database
    let log: OpLog
    /// Device author row → person author row, for every certified device.
    private var personByDevice: [Int64: Int64]?
    /// Device author row → its revocations that take effect.
    private var effectiveRevocations: [Int64: [DeviceRevocation]]?
    /// Devices whose effective revocations changed in this transaction: the store cuts their
    /// chains past the cutoff before the transaction ends (`takeRevokedDevices`).
    private var newlyRevoked: Set<Int64> = []

    init(database: Database, log: OpLog) {
        (self.database, self.log) = (database, log)
    }

    func forgetCachedRows() {
        personByDevice = nil
        effectiveRevocations = nil
        newlyRevoked.removeAll()
    }

    // MARK: Who is whose

    private func loadPeople() throws -> [Int64: Int64] {
        if let personByDevice { return personByDevice }
        let rows = try database.cachedStatement("SELECT device_aid, person_aid FROM devices").rows { ($0.int64(0), $0.int64(1)) }
        let map = Dictionary(rows, uniquingKeysWith: { first, _ in first })
        personByDevice = map
        return map
    }

    /// The person whose device this author row is; the author itself when it is no certified device.
    func personAID(of aid: Int64) throws -> Int64 { try loadPeople()[aid] ?? aid }

    /// The person `user` writes as: their person when `user` is a certified device, else `user`.
    public func person(of user: UserID) throws -> UserID {
        guard let aid = try log.existingAuthorID(user), let person = try loadPeople()[aid], person != aid else { return user }
        return try log.authorKey(person) ?? user
    }

    /// Every device key of `person`, the person's own key first, then certified devices; revoked
    /// ones too when `includingRevoked`.
    public func deviceKeys(of person: UserID, includingRevoked: Bool = false) throws -> [UserID] {
        try devices(of: person).filter { includingRevoked || !$0.revoked }.map(\.device)
    }

    /// The person's devices, their own key first (`device list`).
    public func devices(of person: UserID) throws -> [DeviceView] {
        let personAID = try log.existingAuthorID(person)
        let revoked = try revokedDevices()
        var views = [
            DeviceView(
                device: person, person: person, name: "first device", certifier: nil, certifiedAt: nil,
                revoked: personAID.map { revoked.contains($0) } ?? false)
        ]
        guard let personAID else { return views }
        let rows = try database.cachedStatement(
            """
            SELECT d.device_aid, a.key, d.name, c.key, d.hlc FROM devices d JOIN authors a ON a.aid = d.device_aid
            JOIN authors c ON c.aid = d.certifier_aid WHERE d.person_aid = ? ORDER BY d.hlc, a.key
            """
        ).rows(.integer(personAID)) { row in
            DeviceView(
                device: UserID(publicKey: row.blob(1))!, person: person, name: row.text(2), certifier: UserID(publicKey: row.blob(3)),
                certifiedAt: HLC(raw: UInt64(bitPattern: row.int64(4))), revoked: revoked.contains(row.int64(0)))
        }
        views += rows
        return views
    }

    /// Whether the author row `aid` may write for the person row `person`: it is the person, or a
    /// certified device of theirs.
    func writes(for person: Int64, aid: Int64) throws -> Bool {
        if aid == person { return true }
        return try loadPeople()[aid] == person
    }

    /// Device → person keys for every certified device (for presence over links).
    public func personByDeviceKey() throws -> [UserID: UserID] {
        let rows = try database.cachedStatement(
            "SELECT a.key, p.key FROM devices d JOIN authors a ON a.aid = d.device_aid JOIN authors p ON p.aid = d.person_aid"
        ).rows { (UserID(publicKey: $0.blob(0))!, UserID(publicKey: $0.blob(1))!) }
        return Dictionary(rows, uniquingKeysWith: { first, _ in first })
    }

    // MARK: Certificates

    /// Records a certificate that passed the rules. A device certified twice (for two persons,
    /// or by two certifiers) counts for the person of its earliest certificate in
    /// `(hlc, author, seq)` order, so every replica picks the same whatever arrived first.
    /// Returns true when who is whose changed.
    func noteCertificate(_ certificate: DeviceCertificate, op: Operation, oid: Int64) throws -> Bool {
        let device = try log.authorID(certificate.device)
        let person = try log.authorID(certificate.person)
        let certifier = try log.authorID(certificate.certifier)
        let clock = ClockKey(op)
        let existing = try database.cachedStatement("SELECT clock FROM devices WHERE device_aid = ?").firstRow(.integer(device)) {
            ClockKey(bytes: $0.blob(0))
        }
        if let existing, existing < clock { return false }
        try database.cachedStatement(
            "INSERT OR REPLACE INTO devices(device_aid, person_aid, certifier_aid, name, hlc, clock, oid) VALUES (?, ?, ?, ?, ?, ?, ?)"
        ).run(
            .integer(device), .integer(person), .integer(certifier), .text(certificate.name), .integer(Int64(bitPattern: op.hlc.raw)),
            .blob(clock.bytes), .integer(oid))
        personByDevice = nil
        effectiveRevocations = nil
        return true
    }

    // MARK: Revocations

    /// Records a revocation that passed the rules, then settles which of the person's
    /// revocations take effect. Devices whose revocations changed are kept for the store to cut
    /// (`takeRevokedDevices`).
    func noteRevocation(_ revocation: DeviceRevocation, op: Operation, oid: Int64, aid: Int64) throws {
        let device = try log.authorID(revocation.device)
        let person = try log.authorID(revocation.person)
        try database.cachedStatement(
            "INSERT OR REPLACE INTO device_revocations(oid, device_aid, person_aid, author_aid, clock, body) VALUES (?, ?, ?, ?, ?, ?)"
        ).run(
            .integer(oid), .integer(device), .integer(person), .integer(aid), .blob(ClockKey(op).bytes),
            .blob(OperationBody.deviceRevocation(revocation).encoded))
        try settleRevocations()
    }

    /// Decides which revocations take effect, in `(hlc, author, seq)` order: one counts when its
    /// author writes for the person (their key or a certified device) and is not itself cut off
    /// at that op by a revocation that counted before it. So of two devices revoking each other,
    /// the one that saw the other's revocation first — or, when neither did, the earlier by the
    /// order — loses; and a revoked device's later revocations count for nothing.
    func settleRevocations() throws {
        let before = try loadRevocations()
        let rows = try database.cachedStatement(
            """
            SELECT r.device_aid, r.person_aid, r.author_aid, r.body, o.seq, o.hlc FROM device_revocations r JOIN ops o ON o.oid = r.oid
            ORDER BY r.clock
            """
        ).rows { row -> (device: Int64, person: Int64, author: Int64, revocation: DeviceRevocation, seq: UInt64, hlc: HLC)? in
            guard case .deviceRevocation(let revocation)? = try? OperationBody(type: OperationType.deviceRevocation.rawValue, decoding: row.blob(3))
            else { return nil }
            return (row.int64(0), row.int64(1), row.int64(2), revocation, UInt64(row.int64(4)), HLC(raw: UInt64(bitPattern: row.int64(5))))
        }
        let people = try loadPeople()
        var effective: [Int64: [DeviceRevocation]] = [:]
        let directory = PartitionDescriptor.directory.id
        for row in rows.compactMap({ $0 }) {
            guard row.author == row.person || people[row.author] == row.person else { continue }
            let authorCutOff = effective[row.author, default: []].contains { $0.refuses(partition: directory, seq: row.seq, hlc: row.hlc) }
            if authorCutOff { continue }
            effective[row.device, default: []].append(row.revocation)
        }
        effectiveRevocations = effective
        for device in Set(before.keys).union(effective.keys) where before[device] != effective[device] { newlyRevoked.insert(device) }
    }

    private func loadRevocations() throws -> [Int64: [DeviceRevocation]] {
        if let effectiveRevocations { return effectiveRevocations }
        effectiveRevocations = [:]
        try settleRevocations()
        newlyRevoked.removeAll()
        return effectiveRevocations ?? [:]
    }

    /// The author rows of devices with a revocation that takes effect.
    func revokedDevices() throws -> Set<Int64> { Set(try loadRevocations().filter { !$0.value.isEmpty }.keys) }

    /// The revocations of `aid` that take effect (empty for a device in good standing).
    func revocations(of aid: Int64) throws -> [DeviceRevocation] { try loadRevocations()[aid] ?? [] }

    /// Whether `op` by the author row `aid` falls past a revocation's cutoff.
    func refuses(_ op: Operation, aid: Int64) throws -> Bool {
        try revocations(of: aid).contains { $0.refuses(partition: op.partition, seq: op.seq, hlc: op.hlc) }
    }

    /// The devices whose revocations changed since the last call (the store cuts their chains).
    func takeRevokedDevices() -> Set<Int64> {
        defer { newlyRevoked.removeAll() }
        return newlyRevoked
    }
}
