import Identity
import Replica

/// Which partitions go to which peer (DESIGN §3.2): a pure function of the partition's
/// descriptor, the peer's id and what this node knows, for the shell to call when it builds a
/// session's `PartitionSummary`s and when a peer offers a partition (`.learnPartition`).
///
/// | kind | offered to a peer | carried when a peer offers it |
/// |---|---|---|
/// | room | by id, if the peer holds it too (`.ifPeerHolds`) | never: joining is local |
/// | directory | everyone (`.offer`) | always |
/// | conversation | its members and always its creator (`.offer`); nobody else for now | when this node's user is a member |
/// | inbox | its owner (`.offer`); carriers that hold it (`.ifPeerHolds`) | when it is this user's own |
/// | self | the owner's own nodes, same user id (`.offer`) | when it is this user's own |
///
/// A peer's claims are never trusted for permission: partition ids are self-certifying, and
/// every op is checked against its partition's rules by the store that applies it.
public struct SyncPolicy: Hashable, Sendable {
    /// This node's user.
    public var localUser: UserID
    /// The members (ever-members, DESIGN §3.4) of the conversations this node knows, from its
    /// store or from invites in its inbox. A conversation missing here is shared with nobody.
    public var conversationMembers: [PartitionID: Set<UserID>]

    public init(localUser: UserID, conversationMembers: [PartitionID: Set<UserID>] = [:]) {
        self.localUser = localUser
        self.conversationMembers = conversationMembers
    }

    /// How `descriptor` is offered to `peer`.
    public func sharing(_ descriptor: PartitionDescriptor, with peer: UserID) -> Sharing {
        switch descriptor {
        case .room:
            return .ifPeerHolds
        case .directory:
            return .offer
        case .conversation(let creator, _):
            // The creator is a member by definition (the id proves who created it): an invited
            // node that has no op of the conversation yet can still fetch them from the creator.
            if creator == peer { return .offer }
            return conversationMembers[descriptor.id]?.contains(peer) == true ? .offer : .never
        case .inbox(let owner):
            return owner == peer ? .offer : .ifPeerHolds
        case .ownData(let owner):
            return owner == peer ? .offer : .never
        }
    }

    /// Whether this node should carry a partition a peer offered (the answer to `.learnPartition`).
    public func shouldCarry(_ descriptor: PartitionDescriptor, offeredBy peer: UserID) -> Bool {
        switch descriptor {
        case .room:
            return false
        case .directory:
            return true
        case .conversation(let creator, _):
            return creator == localUser || conversationMembers[descriptor.id]?.contains(localUser) == true
        case .inbox(let owner), .ownData(let owner):
            return owner == localUser
        }
    }

    /// The summaries of a session with `peer`, from this node's partitions and their digests.
    public func summaries(
        of partitions: [(descriptor: PartitionDescriptor, digest: PartitionDigest)], for peer: UserID
    )
        -> [PartitionSummary]
    {
        partitions.map { PartitionSummary(descriptor: $0.descriptor, digest: $0.digest, sharing: sharing($0.descriptor, with: peer)) }
    }
}
