import LoopKit
import LoopKitTesting
import Synchronization
import Testing

/// `Broadcast`: every subscriber gets every value in order, a replay buffer for late subscribers, bounded
/// queues with a policy for slow ones, and the ends (finish, cancel, release) (issue 47).
@Suite("Broadcast")
struct BroadcastTests {
    /// Takes everything a subscription gives until its end.
    static func collect(_ subscription: Broadcast<Int>.Subscription) async -> [Int] {
        var values: [Int] = []
        for await value in subscription { values.append(value) }
        return values
    }

    @Test("Every subscriber gets every value sent after it subscribed, in order; finish ends them after their queue")
    func everySubscriberGetsEverything() async {
        let broadcast = Broadcast<Int>()
        let first = broadcast.subscribe()
        broadcast.send(1)
        let second = broadcast.subscribe()
        broadcast.send(2)
        broadcast.send(3)
        #expect(broadcast.subscriberCount == 2)
        broadcast.finish()
        broadcast.send(4)  // after the end: nothing
        #expect(await Self.collect(first) == [1, 2, 3])
        #expect(await Self.collect(second) == [2, 3])
        #expect(broadcast.subscriberCount == 0)
    }

    @Test("A late subscriber gets the replay buffer first, also after the broadcast finished")
    func replay() async {
        let broadcast = Broadcast<Int>(replay: 2)
        for value in 1...5 { broadcast.send(value) }
        let late = broadcast.subscribe()
        broadcast.send(6)
        broadcast.finish()
        #expect(await Self.collect(late) == [4, 5, 6])
        #expect(await Self.collect(broadcast.subscribe()) == [5, 6])
    }

    @Test("dropOldest: a full queue drops its oldest values, and says how many")
    func dropOldest() async {
        let broadcast = Broadcast<Int>(bufferLimit: 2, overflow: .dropOldest)
        let slow = broadcast.subscribe()
        for value in 1...5 { broadcast.send(value) }
        broadcast.finish()
        #expect(await Self.collect(slow) == [4, 5])
        #expect(slow.droppedCount == 3)
        #expect(!slow.wasDropped)
    }

    @Test("dropSubscriber: a full queue unsubscribes its subscriber, whose iteration ends after what it holds")
    func dropSubscriber() async {
        let broadcast = Broadcast<Int>(bufferLimit: 2, overflow: .dropSubscriber)
        let slow = broadcast.subscribe()
        let keeping = broadcast.subscribe()
        var kept: [Int] = []
        var iterator = keeping.makeAsyncIterator()
        for value in 1...3 {
            broadcast.send(value)
            kept.append(await iterator.next()!)
        }
        #expect(broadcast.subscriberCount == 1)
        #expect(await Self.collect(slow) == [1, 2])
        #expect(slow.wasDropped)
        #expect(kept == [1, 2, 3])
    }

    @Test("A waiting subscriber whose task is cancelled ends, and is unsubscribed")
    func cancellationEndsAWaiter() async {
        let broadcast = Broadcast<Int>()
        let subscription = broadcast.subscribe()
        let waiter = Task { await Self.collect(subscription) }
        waiter.cancel()
        #expect(await waiter.value == [])
        #expect(broadcast.subscriberCount == 0)
    }

    @Test("Releasing a subscription's iterator unsubscribes it")
    func releasingUnsubscribes() async {
        let broadcast = Broadcast<Int>()
        do {
            var iterator = broadcast.subscribe().makeAsyncIterator()
            broadcast.send(1)
            #expect(await iterator.next() == 1)
        }
        #expect(broadcast.subscriberCount == 0)
    }

    @Test("A subscriber task on a loop is resumed in the loop's drain, on its thread, after the send")
    func resumesOnTheSubscribersLoop() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let broadcast = Broadcast<Int>()
        let received = Mutex<[String]>([])
        let subscription = broadcast.subscribe()
        Task(executorPreference: loop) {
            for await value in subscription {
                received.withLock { $0.append("\(value) in \(loop.iteration) on the loop \(loop.isCurrent)") }
            }
        }
        try driver.runUntilIdle()  // the task waits
        broadcast.send(7)           // from this thread (the driver's, outside a drain)
        #expect(received.withLock { $0 }.isEmpty)
        let next = loop.iteration + 1
        try driver.step()
        #expect(received.withLock { $0 } == ["7 in \(next) on the loop true"])
        broadcast.finish()
        try driver.runUntilIdle()
    }
}
