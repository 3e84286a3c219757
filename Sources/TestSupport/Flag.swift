import Synchronization

/// A flag one task or thread sets and another polls (an attack is over, a read is held open).
public final class Flag: Sendable {
    private let value = Atomic<Bool>(false)

    public init() {}

    public func set() { value.store(true, ordering: .sequentiallyConsistent) }
    public var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
}
