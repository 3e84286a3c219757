/// Events in simulated time, taken in the order (time, insertion): two events at one
/// millisecond run in the order they were scheduled, so a run depends on its seed alone.
///
/// The heap orders small keys; each event waits in a slot of its own, so sifting moves three
/// integers, not an event with its payload (a sync message, a beacon).
struct EventQueue<Event> {
    private struct Key {
        let time: UInt64
        let order: UInt64
        let slot: Int

        func precedes(_ other: Key) -> Bool { (time, order) < (other.time, other.order) }
    }

    private var heap: [Key] = []
    private var slots: [Event?] = []
    private var freeSlots: [Int] = []
    private var inserted: UInt64 = 0

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }

    mutating func schedule(_ event: Event, at time: UInt64) {
        inserted += 1
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            slots[slot] = event
        } else {
            slot = slots.count
            slots.append(event)
        }
        heap.append(Key(time: time, order: inserted, slot: slot))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { break }
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
            if left < heap.count, heap[left].precedes(heap[smallest]) { smallest = left }
            if right < heap.count, heap[right].precedes(heap[smallest]) { smallest = right }
            guard smallest != parent else { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
        let event = slots[first.slot].take()!
        freeSlots.append(first.slot)
        return (first.time, event)
    }
}
