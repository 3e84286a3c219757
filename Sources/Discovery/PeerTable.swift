import Identity

/// The peer table: the records by identity, with the counts the overlay and the table limit ask
/// for on every beacon kept as records change, rather than counted over the table each time —
/// a walk that, for every newcomer a node hears, made discovery's cost grow with the cube of
/// the network's size in the simulator.
struct PeerTable: Sendable, Sequence {
    private var byID: [UserID: PeerRecord] = [:]
    /// Records with a link up.
    private(set) var linkedCount = 0
    /// Records from the peers file (never forgotten; not counted against `maxPeers`).
    private(set) var staticCount = 0
    /// Records in the `gone` state.
    private(set) var goneCount = 0
    /// The table is full and a walk found no entry a newcomer may displace: until this time,
    /// newcomers are refused without another walk (`Discovery.makeRoom`). Entries fall silent
    /// with time, so it lasts one state-check step; an entry removed, or one whose link ended
    /// (a linked peer is never displaced), ends it at once.
    var fullUntil: UInt64?

    subscript(id: UserID) -> PeerRecord? {
        get { byID[id] }
        set {
            if let old = byID[id] {
                count(old, -1)
                if newValue == nil || (old.link != nil && newValue?.link == nil) { fullUntil = nil }
            }
            if let newValue { count(newValue, 1) }
            byID[id] = newValue
        }
    }

    var count: Int { byID.count }
    var keys: Dictionary<UserID, PeerRecord>.Keys { byID.keys }
    var values: Dictionary<UserID, PeerRecord>.Values { byID.values }
    func makeIterator() -> Dictionary<UserID, PeerRecord>.Iterator { byID.makeIterator() }

    private mutating func count(_ record: PeerRecord, _ sign: Int) {
        if record.link != nil { linkedCount += sign }
        if record.isStatic { staticCount += sign }
        if record.state == .gone { goneCount += sign }
    }
}
