/// The pool's FIFO of items waiting for a thread: an array read from a moving head, compacted as it
/// empties, so a push and a pop are amortised O(1) with no dependency beyond the standard library.
struct WorkQueue {
    private var items: [WorkItem?] = []
    private var head = 0

    /// Items held, cancelled ones included (they are skipped when popped).
    var count: Int { items.count - head }

    mutating func append(_ item: WorkItem) {
        items.append(item)
    }

    mutating func popFirst() -> WorkItem? {
        guard head < items.count else { return nil }
        let item = items[head]
        items[head] = nil
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: items.count <= 4_096)
            head = 0
        } else if head >= 1_024, head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return item
    }

    /// Takes every item, in order, leaving the queue empty.
    mutating func removeAll() -> [WorkItem] {
        defer {
            items = []
            head = 0
        }
        return items[head...].compactMap { $0 }
    }
}
