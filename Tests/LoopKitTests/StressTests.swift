import LoopKit
import Synchronization
import Testing

/// Many producers against a busy loop: nothing lost, nothing run twice, each producer's order kept.
@Suite("Stress")
struct StressTests {
    @Test("four producers × 100k enqueues while the loop self-enqueues: every item runs once, in order")
    func producersAgainstBusyLoop() throws {
        let producers = 4, perProducer = 100_000
        let loop = try EventLoop()
        let lastSeen = Lock<[Int]>(Array(repeating: -1, count: producers))
        let outOfOrder = Atomic<Int>(0)
        let total = Atomic<Int>(0)
        let selfEnqueued = Atomic<Int>(0)
        @Sendable func churn() {
            selfEnqueued.add(1, ordering: .relaxed)
            if total.load(ordering: .relaxed) < producers * perProducer { try? loop.enqueue(churn) }
        }
        try loop.enqueue(churn)
        let done = (0..<producers).map { producer in
            startThread {
                for n in 0..<perProducer {
                    try! loop.enqueue {
                        let previous = lastSeen.withLock { seen in
                            defer { seen[producer] = n }
                            return seen[producer]
                        }
                        if previous != n - 1 { outOfOrder.add(1, ordering: .relaxed) }
                        if total.add(1, ordering: .relaxed).newValue == producers * perProducer { loop.stop() }
                    }
                }
            }
        }
        try loop.run()
        for semaphore in done { semaphore.wait() }
        try loop.runOnce(blocking: false)
        #expect(total.load(ordering: .relaxed) == producers * perProducer)
        #expect(outOfOrder.load(ordering: .relaxed) == 0)
        #expect(selfEnqueued.load(ordering: .relaxed) > 1)
    }
}
