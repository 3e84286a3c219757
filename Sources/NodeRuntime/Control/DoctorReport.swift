/// `parley doctor`: what a node sees on the network, and why a peer is not linked
/// (docs/DESIGN.md §4.1). Times are Unix milliseconds.
public struct DoctorReport: Codable, Sendable, Equatable {
    public struct Interface: Codable, Sendable, Equatable {
        public var name: String
        public var address: String
        public var netmask: String
        public var broadcast: String?
        public var isUp: Bool
        public var isLoopback: Bool
    }

    /// The node's sockets.
    public struct Sockets: Codable, Sendable, Equatable {
        /// The TCP listener, `HOST:PORT`.
        public var listen: String
        /// The UDP discovery port, nil when discovery is off.
        public var discoveryPort: UInt16?
        public var controlSocket: String
    }

    /// Beacon traffic.
    public struct Beacons: Codable, Sendable, Equatable {
        public var sent: UInt64
        public var sendFailures: UInt64
        public var lastSendError: String?
        public var ownHeard: UInt64
        public var accepted: UInt64
        public var replayed: UInt64
        public var rateLimited: UInt64
        public var oversized: Int
        public var duplicateIdentity: UInt64
        /// Where the last beacon with our identity from another process came from.
        public var duplicateIdentitySource: String?
        /// Dials put off because this node's dial budget was spent (a flood of new identities).
        public var dialsDeferred: UInt64? = nil
    }

    /// Datagrams from one source address.
    public struct Source: Codable, Sendable, Equatable {
        public var host: String
        public var heard: UInt64
        public var rejected: UInt64
        public var rateLimited: UInt64
        public var lastHeard: UInt64
    }

    /// Rejected datagrams of one kind.
    public struct Rejection: Codable, Sendable, Equatable {
        /// `badMAC`, `badMagic`, `wrongLength`, `unsupportedVersion`, `invalidPort`, `invalidInterval`.
        public var reason: String
        /// What it means, in words: "a node at X uses a different network secret".
        public var explanation: String
        public var count: UInt64
        public var lastSource: String
    }

    /// One peers-file entry.
    public struct StaticEntry: Codable, Sendable, Equatable {
        public var endpoint: String
        public var key: String?
        /// `linked`, `discovered`, `suspect`, `gone`, or `key unknown` for a keyless entry not yet probed.
        public var state: String
    }

    /// A known peer without a link, and why.
    public struct Unlinked: Codable, Sendable, Equatable {
        public var id: String
        public var nick: String?
        public var state: String
        public var addresses: [String]
        public var why: String
    }

    /// Connections refused and bans.
    public struct Admission: Codable, Sendable, Equatable {
        public var unauthenticated: Int
        public var refused: UInt64
        /// Of `refused`, authenticated connections refused a link (the caps on links).
        public var linksRefused: UInt64? = nil
        public var violations: UInt64
        public var bannedHosts: [String]
        public var bannedPeers: [String]
    }

    public var interfaces: [Interface]
    public var broadcastTargets: [String]
    public var sockets: Sockets
    public var beacons: Beacons
    public var sources: [Source]
    public var rejections: [Rejection]
    public var peersFile: String?
    public var staticPeers: [StaticEntry]
    /// A clock that is off from this node's: a linked peer's, from its HELLO, or an author's
    /// whose ops wait here because they are stamped too far ahead (`HybridClock.maxLeadMillis`).
    public struct Clock: Codable, Sendable, Equatable {
        public var id: String
        public var nick: String?
        /// Milliseconds ahead of this node's clock; negative: behind.
        public var aheadMillis: Int64
        /// `link` (measured when its link came up) or `held ops` (the lead of its latest op held here).
        public var source: String

        /// `milliseconds`' magnitude in words: "850 ms", "4.2 s", "10 min 3 s", "2 h 5 min", "76 years".
        public static func span(_ milliseconds: Int64) -> String {
            let millis = milliseconds.magnitude
            let seconds = millis / 1_000
            switch millis {
            case ..<1_000: return "\(millis) ms"
            case ..<60_000: return "\(seconds).\(millis % 1_000 / 100) s"
            case ..<3_600_000: return "\(seconds / 60) min \(seconds % 60) s"
            case ..<172_800_000: return "\(seconds / 3_600) h \(seconds % 3_600 / 60) min"
            case ..<63_072_000_000: return "\(seconds / 86_400) days"
            default: return "\(seconds / 31_557_600) years"
            }
        }
    }

    public var links: Int
    public var unlinked: [Unlinked]
    public var admission: Admission
    /// Clocks off by a second or more, the farthest first (nil from a node that reports none).
    public var clocks: [Clock]? = nil
    /// Chains frozen by forks in the store (nil from a node that reports none).
    public var forks: [ForkReport]? = nil
}
