/// A FIFO read from a moving head of an array, compacted as it empties, so a push and a pop are amortised
/// O(1) with no dependency beyond the standard library: a work pool's items waiting for a thread, a loop
/// group's jobs waiting for a loop.
struct FIFOQueue<Element> {
    private var items: [Element?] = []
    private var head = 0

    /// Elements held.
    var count: Int { items.count - head }

    mutating func append(_ item: Element) {
        items.append(item)
    }

    mutating func popFirst() -> Element? {
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

    /// Takes every element, in order, leaving the queue empty.
    mutating func removeAll() -> [Element] {
        defer {
            items = []
            head = 0
        }
        return items[head...].compactMap { $0 }
    }
}
