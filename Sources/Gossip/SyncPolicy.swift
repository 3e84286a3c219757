import Identity
import Replica

/// Which partitions go to which peer (docs/DESIGN.md §3.2): a pure function of the partition's
/// descriptor, the peer's id and what this node knows, for the shell to call when it builds a
/// session's `PartitionSummary`s and when a peer offers a partition (`.learnPartition`).
///
/// | kind | offered to a peer | carried when a peer offers it |
/// |---|---|---|
/// | room | everyone (`.offer`): holders, and carriers | when joined; otherwise as a carrier |
/// | directory | everyone (`.offer`) | always |
/// | conversation | everyone (`.offer`): members, and carriers for store and forward | when this node's user is a member; otherwise as a carrier |
/// | inbox | everyone (`.offer`): its owner, and carriers | when it is this user's own; otherwise as a carrier |
/// | self | the owner's own nodes, same user id (`.offer`) | when it is this user's own |
/// | private room | everyone (`.offer`): holders, and carriers | never offered to a holder that lacks it (it joined); otherwise as a carrier |
///
/// Store and forward (docs/DESIGN.md §3.5): with `carriesForOthers` (the default) a node offers every
/// conversation, inbox and room it holds to every linked peer and carries those offered to it, at
/// most `maxCarried` partitions it is not a member or owner of, or did not join (each within the
/// store's carrier quota). So a member who was offline when it was added learns of the
/// conversation through its inbox and fetches the history from any node that carries both, after
/// the creator is gone; and a room reaches every node that joined it through nodes that did not,
/// when no holder is a neighbour (the overlay links each node to a few peers only, §4.1.2). A
/// carrier of a conversation holds ciphertext only: bodies, names, attachments and their hashes
/// are encrypted, blobs of a conversation are served only to its members, and typing goes only to
/// members. A room is plaintext and its name public (the room directory lists it): a carrier
/// stores its ops and lists, shows and fetches nothing of it. Without `carriesForOthers`,
/// conversations go to their members only, inboxes to their owners and rooms to peers that hold
/// them too (and to carriers that already hold them).
///
/// A peer's claims are never trusted for permission: partition ids are self-certifying, and
/// every op is checked against its partition's rules by the store that applies it.
public struct SyncPolicy: Hashable, Sendable {
    /// This node's user.
    public var localUser: UserID
    /// The members (ever-members, docs/DESIGN.md §3.4) of the conversations this node knows, from its
    /// store or from invites in its inbox. A conversation missing here is shared with nobody.
    public var conversationMembers: [PartitionID: Set<UserID>]

    /// Offer conversations and inboxes to every peer, and carry those others offer.
    public var carriesForOthers: Bool
    /// Partitions this node already carries for others (not a member, not the owner).
    public var carriedCount: Int
    /// The most partitions a node carries for others.
    public static let maxCarried = 256

    public init(
        localUser: UserID, conversationMembers: [PartitionID: Set<UserID>] = [:], carriesForOthers: Bool = true, carriedCount: Int = 0
    ) {
        self.localUser = localUser
        self.conversationMembers = conversationMembers
        self.carriesForOthers = carriesForOthers
        self.carriedCount = carriedCount
    }

    /// How `descriptor` is offered to `peer`.
    public func sharing(_ descriptor: PartitionDescriptor, with peer: UserID) -> Sharing {
        switch descriptor {
        case .room:
            return carriesForOthers ? .offer : .ifPeerHolds
        case .directory:
            return .offer
        case .conversation(let creator, _):
            // The creator is a member by definition (the id proves who created it): an invited
            // node that has no op of the conversation yet can still fetch them from the creator.
            if creator == peer || carriesForOthers { return .offer }
            return conversationMembers[descriptor.id]?.contains(peer) == true ? .offer : .never
        case .inbox(let owner):
            return owner == peer || carriesForOthers ? .offer : .ifPeerHolds
        case .ownData(let owner):
            return owner == peer ? .offer : .never
        case .privateRoom:
            // Like a conversation: a holder cannot tell holders from carriers (the session
            // shows neither), so everyone is offered it and carries ciphertext.
            return carriesForOthers ? .offer : .ifPeerHolds
        }
    }

    /// Whether this node should carry a partition a peer offered (the answer to `.learnPartition`).
    public func shouldCarry(_ descriptor: PartitionDescriptor, offeredBy peer: UserID) -> Bool {
        switch descriptor {
        case .room:
            // A node that joined the room holds it already; any other carries it.
            return carriesForOthers && carriedCount < Self.maxCarried
        case .directory:
            return true
        case .conversation(let creator, _):
            if creator == localUser || conversationMembers[descriptor.id]?.contains(localUser) == true { return true }
            return carriesForOthers && carriedCount < Self.maxCarried
        case .inbox(let owner):
            return owner == localUser || (carriesForOthers && carriedCount < Self.maxCarried)
        case .ownData(let owner):
            return owner == localUser
        case .privateRoom:
            // A node that holds the passphrase joined the room already; any other carries it.
            return carriesForOthers && carriedCount < Self.maxCarried
        }
    }

    /// Whether this node may send `peer` blobs named in `descriptor`'s views (BLOB_WANT): a room
    /// this node joined (`joined`; the peer asking knows its name), the directory, or a
    /// conversation `members` (its ever-members) include the peer in — a removed member still
    /// reads what came before. Never an inbox or `self`, and never a carrier: it cannot open a
    /// conversation's blobs and has no need. A private room's blobs go from a node that joined
    /// it to whoever names one: the hash is only ever written inside an encrypted body, so a peer
    /// that names it has read the room, and what it gets is ciphertext under the content key.
    public static func servesBlobs(of descriptor: PartitionDescriptor, to peer: UserID, joined: Bool, members: Set<UserID>) -> Bool {
        switch descriptor {
        case .room, .privateRoom: joined
        case .directory: true
        case .conversation(let creator, _): creator == peer || members.contains(peer)
        case .inbox, .ownData: false
        }
    }

    /// The most peers pinned on top of the overlay.
    public static let maxPinned = 16

    /// The peers to keep linked whatever the overlay picks (docs/DESIGN.md §4.1.2): the person's
    /// other `devices` first (their own data goes over a direct link only), then the members
    /// (ever) of the conversations the person is in, at most `maxPinned`, in a fixed order.
    public func linksToPin(person: UserID, devices: [UserID]) -> Set<UserID> {
        let mine: Set<UserID> = [person, localUser]
        var pinned = devices.filter { !mine.contains($0) }
        let members = conversationMembers.values.filter { $0.contains(person) }.reduce(into: Set<UserID>()) { $0.formUnion($1) }
        pinned += members.subtracting(pinned).subtracting(mine).sorted()
        return Set(pinned.prefix(Self.maxPinned))
    }

    /// Whether this node would hold `descriptor` only as a carrier for others (a conversation its
    /// user is not known to be in, another user's inbox, a room a peer offered): recorded as not
    /// joined, so the store's carrier quota applies and nothing of it is listed as the user's own.
    public func isCarrierOnly(_ descriptor: PartitionDescriptor) -> Bool {
        switch descriptor {
        case .conversation(let creator, _):
            return creator != localUser && conversationMembers[descriptor.id]?.contains(localUser) != true
        case .inbox(let owner):
            return owner != localUser
        case .privateRoom, .room:
            return true
        case .directory, .ownData:
            return false
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
