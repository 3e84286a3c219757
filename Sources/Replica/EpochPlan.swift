import Identity
import Wire

/// Which key a member writes a conversation's bodies with, and which grants must come first
/// (docs/DESIGN.md §3.5). A pure function of the op set (membership, removals, grants) and of the keys
/// the member holds, so members with the same ops and keys decide alike.
///
/// - The *required epoch* is the number of remove and leave ops in the conversation: each calls
///   for a new key that the member who left or was removed never receives. Every replica,
///   carriers included, counts the same ops (they are plaintext), and the count only grows as
///   ops arrive.
/// - A key is *trusted* for writing if it is for the required epoch and some grant of it (same
///   key id) is authored by a current member. A grant by anyone else — a removed member offering
///   a key it chose — is used for reading only, so it cannot make members encrypt to it.
/// - A current member writes with the trusted key it holds that has the smallest key id. If it
///   holds none, it first *rotates*: makes a fresh key for the required epoch and grants it to
///   every current member. Any current member may rotate — the creator right after removing
///   someone, the first remaining member who writes after a leave — so a conversation never
///   waits for its creator. Concurrent rotations for one epoch are all valid; readers try each
///   key they hold for an epoch.
/// - Before writing it *shares* its key with every current member that no grant of that key
///   reaches (someone added concurrently with a rotation), so whatever it writes is readable by
///   every current member it knows of.
///
/// Keys are sealed to **devices** (docs/DESIGN.md §3.8): a member is a person, and every
/// device of theirs that is not revoked gets its own box, so `recipients` and `shareWith` name
/// device keys (a person with no certified device is their own one device). A grant's author is
/// counted as its person.
///
/// A removed member keeps the keys it had: it can read what was written before its removal
/// (and, during the window in which a writer has not yet seen the removal, what that writer
/// wrote), never what is written under a later epoch.
public enum EpochPlan: Hashable, Sendable {
    /// The member is not a current member: it may not write.
    case notMember
    /// No trusted key for the required epoch is held: make one and grant it to `recipients`.
    case rotate(epoch: UInt32, recipients: [UserID])
    /// Write with this key, after granting it to `shareWith` (empty when nobody lacks it).
    case write(epoch: UInt32, keyID: Bytes32, shareWith: [UserID])

    /// One key grant, as every replica can read it.
    public struct Grant: Hashable, Sendable {
        public var author: UserID
        public var epoch: UInt32
        public var keyID: Bytes32
        public var recipients: Set<UserID>
        public init(author: UserID, epoch: UInt32, keyID: Bytes32, recipients: Set<UserID>) {
            (self.author, self.epoch, self.keyID, self.recipients) = (author, epoch, keyID, recipients)
        }
    }

    /// The epoch writers must use: one per remove or leave op.
    public static func requiredEpoch(removalsAndLeaves: Int) -> UInt32 {
        UInt32(clamping: removalsAndLeaves)
    }

    /// What `member` (a person) must do before writing. `heldKeys` maps the ids of the keys it
    /// holds for this conversation to their epochs; `devices` maps a person to their devices in
    /// good standing (absent: the person's own key alone).
    public static func plan(
        for member: UserID, membership: Membership.State, requiredEpoch: UInt32, grants: [Grant], heldKeys: [Bytes32: UInt32],
        devices: [UserID: [UserID]] = [:]
    ) -> EpochPlan {
        guard membership.current.contains(member) else { return .notMember }
        let everyDevice = membership.current.sorted().flatMap { devices[$0] ?? [$0] }
        let trusted = Set(
            grants.filter { $0.epoch == requiredEpoch && membership.current.contains($0.author) }.map(\.keyID))
        let usable = trusted.filter { heldKeys[$0] == requiredEpoch }
        guard let keyID = usable.min() else {
            return .rotate(epoch: requiredEpoch, recipients: everyDevice)
        }
        let reached = grants.filter { $0.keyID == keyID }.reduce(into: Set<UserID>()) { $0.formUnion($1.recipients) }
        return .write(epoch: requiredEpoch, keyID: keyID, shareWith: everyDevice.filter { !reached.contains($0) })
    }
}
