/// Events in simulated time, taken in the order (time, insertion): two events at one
/// millisecond run in the order they were scheduled, so a run depends on its seed alone.
struct EventQueue<Event> {
    private var heap: [(time: UInt64, order: UInt64, event: Event)] = []
    private var inserted: UInt64 = 0

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }

    mutating func schedule(_ event: Event, at time: UInt64) {
        inserted += 1
        heap.append((time, inserted, event))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.precedes(heap[child], heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// The earliest event, removed.
    mutating func next() -> (time: UInt64, event: Event)? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let first = heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count, Self.precedes(heap[left], heap[smallest]) { smallest = left }
            if right < heap.count, Self.precedes(heap[right], heap[smallest]) { smallest = right }
            guard smallest != parent else { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
        return (first.time, first.event)
    }

    private static func precedes(_ a: (time: UInt64, order: UInt64, event: Event), _ b: (time: UInt64, order: UInt64, event: Event)) -> Bool {
        (a.time, a.order) < (b.time, b.order)
    }
}
