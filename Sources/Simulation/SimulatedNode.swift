import Discovery
import Gossip
import Identity
import Replica

/// One simulated node: its identity and replica (which survive a crash, like its data
/// directory), and while it runs, its `Discovery` and the gossip shell's state — what
/// NodeRuntime's `GossipHandler` keeps: a session per link, chain claims, pushers.
final class SimulatedNode {
    let index: Int
    let identity: Identity
    var id: UserID { identity.id }
    /// Nil while the node is down. Whether it runs is kept apart (`isRunning`): comparing the
    /// optional with nil copied the whole discovery state, and the simulator asks on every event.
    var discovery: Discovery? {
        didSet {
            switch discovery {
            case .none: isRunning = false
            case .some: isRunning = true
            }
        }
    }
    private(set) var isRunning = false
    /// The tick the discovery instance asked for last (earlier requests are void).
    var timerDue: UInt64?
    /// Bumped at every start and crash: events of an earlier life are void.
    var life = 0
    var replica = SimulatedReplica()
    /// Hops by which each write reached this node, plus one (0: not held), by write number.
    var hopsPlusOne: [UInt8] = []

    /// One session per link, by peer index, and the peers in order (every event handed to all
    /// sessions takes it, as in `GossipHandler`).
    var sessions: [Int: SessionEntry] = [:] {
        didSet { if sessions.count != sessionOrder.count { sessionOrder = sessions.keys.sorted() } }
    }
    private(set) var sessionOrder: [Int] = []
    /// The link that pushes each chain to this node, which session fetches each chain, and the
    /// sessions refused it meanwhile (`GossipHandler`'s duties, DESIGN §4.3.2).
    var pushers: [ChainKey: Int] = [:]
    var claims: [ChainKey: Int] = [:]
    var refused: [ChainKey: Set<Int>] = [:]
    /// Directives waiting to be carried out, and whether a loop is carrying them out.
    var work: [(peer: Int, link: UInt64, directive: GossipDirective)] = []
    var draining = false

    final class SessionEntry {
        let link: UInt64
        var session: GossipSession
        var timerDue: UInt64?

        init(link: UInt64, session: GossipSession) {
            self.link = link
            self.session = session
        }
    }

    init(index: Int, identity: Identity) {
        self.index = index
        self.identity = identity
    }

    /// Forgets what the running process knew (a crash); the replica stays.
    func resetGossip() {
        sessions = [:]
        pushers = [:]
        claims = [:]
        refused = [:]
        work = []
        draining = false
    }
}
