import Identity
import Wire

/// A last-writer-wins register ordered by `ClockKey` (hlc, author, seq).
public struct Register<Value: Hashable & Sendable>: Hashable, Sendable {
    public private(set) var value: Value
    public private(set) var clock: ClockKey?

    public init(_ value: Value, clock: ClockKey? = nil) { (self.value, self.clock) = (value, clock) }

    /// Takes `value` if `clock` is later than the current one. Commutative and idempotent.
    public mutating func merge(_ value: Value, at clock: ClockKey) {
        if let current = self.clock, clock <= current { return }
        self.value = value
        self.clock = clock
    }
}

/// The merged state of one task (docs/DESIGN.md §3.4): per-field last writer wins on (hlc, author, seq);
/// a delete is a tombstone that nothing undoes. Updates may arrive before the create (they come
/// from other authors), so every field is a register and `created` is set when the create lands.
public struct TaskState: Hashable, Sendable {
    public var created = false
    public var creator: UserID?
    public var createdAt: HLC?
    public var title = Register<String>("")
    public var status = Register<TaskStatus>(.open)
    public var owner = Register<UserID?>(nil)
    public var deleted = false

    public init() {}

    /// Folds one task op into the state; any order of the same ops gives the same state.
    public mutating func apply(_ body: OperationBody, author: UserID, hlc: HLC, seq: UInt64) {
        let clock = ClockKey(hlc: hlc, author: author, seq: seq)
        switch body {
        case .taskCreate(let title, let owner):
            created = true
            creator = author
            createdAt = hlc
            self.title.merge(title, at: clock)
            status.merge(.open, at: clock)
            self.owner.merge(owner, at: clock)
        case .taskUpdate(_, let title, let status, let owner):
            if let title { self.title.merge(title, at: clock) }
            if let status { self.status.merge(status, at: clock) }
            switch owner {
            case .unchanged: break
            case .set(let user): self.owner.merge(user, at: clock)
            case .cleared: self.owner.merge(nil, at: clock)
            }
        case .taskDelete:
            deleted = true
        default:
            preconditionFailure("not a task op: \(body.type)")
        }
    }
}

// MARK: - Stored form

extension TaskState {
    /// A compact binary form for the store's `tasks` view.
    public var encoded: [UInt8] {
        var w = ByteWriter()
        w.u8(created ? 1 : 0)
        w.u8(deleted ? 1 : 0)
        w.optional(creator) { w, v in w.bytes32(v.raw) }
        w.optional(createdAt) { w, v in w.u64(v.raw) }
        w.string16(title.value)
        w.optional(title.clock) { w, v in w.raw(v.bytes) }
        w.u8(status.value.rawValue)
        w.optional(status.clock) { w, v in w.raw(v.bytes) }
        w.optional(owner.value) { w, v in w.bytes32(v.raw) }
        w.optional(owner.clock) { w, v in w.raw(v.bytes) }
        return w.bytes
    }

    public init(decoding bytes: [UInt8]) throws(WireDecodingError) {
        var r = ByteReader(bytes)
        created = try r.u8("created") == 1
        deleted = try r.u8("deleted") == 1
        creator = try r.optional("creator") { (r: inout ByteReader) throws(WireDecodingError) in UserID(try r.bytes32("creator")) }
        createdAt = try r.optional("created at") { (r: inout ByteReader) throws(WireDecodingError) in HLC(raw: try r.u64("created at")) }
        let titleValue = try r.string16("title")
        let titleClock = try r.optional("title clock") { (r: inout ByteReader) throws(WireDecodingError) in ClockKey(bytes: try r.raw(48, "clock")) }
        title = Register(titleValue, clock: titleClock)
        guard let statusValue = TaskStatus(rawValue: try r.u8("status")) else { throw .invalidValue(field: "status") }
        let statusClock = try r.optional("status clock") { (r: inout ByteReader) throws(WireDecodingError) in ClockKey(bytes: try r.raw(48, "clock")) }
        status = Register(statusValue, clock: statusClock)
        let ownerValue = try r.optional("owner") { (r: inout ByteReader) throws(WireDecodingError) in UserID(try r.bytes32("owner")) }
        let ownerClock = try r.optional("owner clock") { (r: inout ByteReader) throws(WireDecodingError) in ClockKey(bytes: try r.raw(48, "clock")) }
        owner = Register(ownerValue, clock: ownerClock)
        try r.expectEnd()
    }
}
