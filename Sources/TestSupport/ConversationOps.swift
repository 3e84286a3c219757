import Identity
import Replica
import Sodium
import Wire

/// Conversation ops signed without a store, the way a member's store writes them (docs/DESIGN.md §3.5):
/// content bodies encrypted with an epoch key, grants sealed to members, invites sealed to an
/// inbox's owner.
extension OpFactory {
    /// The next op of `author` carrying `body` encrypted with `key` (in `key`'s conversation).
    public mutating func makeEncrypted(_ body: OperationBody, with key: EpochKey, by author: Identity, hlcOffset: Int64 = 0) -> Operation {
        let sealed = try! EncryptedBody.seal(body.encoded, with: key, type: body.type, author: author.id)
        return make(type: body.type, flags: .bodyEncrypted, body: sealed, in: key.partition, by: author, hlcOffset: hlcOffset)
    }

    /// The next op of `author` granting `key` to `members`.
    public mutating func makeGrant(_ key: EpochKey, to members: [UserID], by author: Identity, hlcOffset: Int64 = 0) -> Operation {
        make(.keyGrant(try! KeyGrant(granting: key, to: members)), in: key.partition, by: author, hlcOffset: hlcOffset)
    }

    /// The next op of `author` in `owner`'s inbox: an invite to `conversation`.
    public mutating func makeInvite(to owner: UserID, conversation: PartitionDescriptor, by author: Identity) -> Operation {
        make(
            type: .invite, flags: .bodyEncrypted, body: try! Invite.seal(conversation, to: owner), in: PartitionDescriptor.inbox(owner: owner).id,
            by: author)
    }
}

extension Fixtures {
    /// A conversation created by `creator` with a nonce from `seed`.
    public static func conversation(creator: Identity, seed: UInt64) -> PartitionDescriptor {
        .conversation(creator: creator.id, nonce: Bytes32(w0: seed, w1: seed, w2: 1, w3: 2))
    }

    /// A fixed epoch key (its bytes from `seed`) for `epoch` of `partition`.
    public static func epochKey(_ partition: PartitionID, epoch: UInt32, seed: UInt8) -> EpochKey {
        EpochKey(partition: partition, epoch: epoch, key: SecureBytes([UInt8](repeating: seed, count: 32)))!
    }
}
