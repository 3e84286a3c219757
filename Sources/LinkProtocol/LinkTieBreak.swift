import Discovery
import Identity

/// Which side dialed a link.
public enum LinkDirection: String, Sendable, Equatable, Codable {
    /// The peer dialed us.
    case inbound
    /// We dialed the peer.
    case outbound
}

/// docs/DESIGN.md §4.1: "If both sides dial at once, keep the link dialed by the smaller key."
public enum LinkTieBreak {
    /// Whether a newly ready link replaces the existing ready link of the same peer.
    ///
    /// A different instance id in the new HELLO means the peer restarted and the existing link is
    /// stale: the new one wins. Otherwise both ends apply the same rule and keep the same TCP
    /// connection: the one dialed by the smaller key; with two links of the same direction, the
    /// existing one.
    public static func keepsNewLink(
        existing: (direction: LinkDirection, instance: InstanceID?),
        new: (direction: LinkDirection, instance: InstanceID),
        local: UserID, remote: UserID
    ) -> Bool {
        if let old = existing.instance, old != new.instance { return true }
        guard existing.direction != new.direction else { return false }
        let smallerDials: LinkDirection = local < remote ? .outbound : .inbound
        return new.direction == smallerDials
    }
}
