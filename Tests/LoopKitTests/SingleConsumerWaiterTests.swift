import LoopKit
import LoopKitTesting
import Testing

/// Why the test source failed.
private struct SourceFailure: Error, Equatable, CustomStringConvertible {
    var description: String { "the source failed" }
}

/// A loop-confined source of numbers with one async consumer, built as the package's sequences are: a
/// buffer of what the consumer has not taken, the end once it is known, and the waiter.
private final class NumberSource: @unchecked Sendable {  // loop-confined: the tests touch it on the loop's thread only
    var buffer: [Int] = []
    var ending: SourceFailure??
    var waiter = SingleConsumerWaiter<Int, SourceFailure>()
    /// Whether the consumer is parked (the waiter is not copyable, so `#expect` cannot take it apart).
    var consumerWaits: Bool { waiter.isWaiting }
    /// How often the consumer looked for something ready, and how often it parked.
    var looks = 0
    var parks = 0
    /// A number that arrives while the consumer's task hops between its first look and parking.
    var arrivingDuringTheHop: Int?

    func next() async throws(SourceFailure) -> Int? {
        try await SingleConsumerWaiter.next(readyNow: { readyNow() }) { continuation in
            parks += 1
            waiter.park(continuation, for: "NumberSource.numbers")
        }
    }

    private func readyNow() -> Result<Int?, SourceFailure>? {
        looks += 1
        if !buffer.isEmpty { return .success(buffer.removeFirst()) }
        if let ending { return ending.map { .failure($0) } ?? .success(nil) }
        if let number = arrivingDuringTheHop {
            arrivingDuringTheHop = nil
            buffer.append(number)
        }
        return nil
    }

    /// The producer: hands `number` to the waiting consumer, or keeps it.
    func produce(_ number: Int) {
        if let consumer = waiter.unpark() {
            consumer.resume(returning: number)
        } else {
            buffer.append(number)
        }
    }

    /// The producer ends the source, cleanly (nil) or with `failure`.
    func end(_ failure: SourceFailure?) {
        ending = .some(failure)
        waiter.unpark()?.resume(with: failure.map { .failure($0) } ?? .success(nil))
    }
}

/// Starts a task on the driver's loop that takes one element from `source` and records what it got.
@discardableResult
private func consume(_ source: NumberSource, on driver: LoopDriver, into trace: OrderTrace) -> Task<Void, Never> {
    Task(executorPreference: driver.loop) {
        do {
            let number = try await source.next()
            trace.record(number.map(String.init) ?? "end")
        } catch {
            trace.record("\(error)")
        }
    }
}

@Suite("SingleConsumerWaiter: the one async consumer of a loop-confined source")
struct SingleConsumerWaiterTests {
    @Test("What is ready now is returned without suspending: one look, the continuation never made")
    func readyElementIsReturnedWithoutSuspending() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        let source = NumberSource()
        source.buffer = [1]
        consume(source, on: driver, into: trace)
        _ = try driver.step()
        #expect(trace.labels == ["1"])
        #expect(source.looks == 1)  // a continuation's closure would have looked a second time
        #expect(source.parks == 0)
    }

    @Test("The end and a failure that are ready now are returned without suspending")
    func readyEndIsReturnedWithoutSuspending() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        let ended = NumberSource()
        ended.end(nil)
        let failed = NumberSource()
        failed.end(SourceFailure())
        consume(ended, on: driver, into: trace)
        _ = try driver.step()
        consume(failed, on: driver, into: trace)
        _ = try driver.step()
        #expect(trace.labels == ["end", "the source failed"])
        #expect(ended.looks == 1 && failed.looks == 1)
        #expect(ended.parks == 0 && failed.parks == 0)
    }

    @Test("A waiting consumer is resumed exactly once by an element, in the drain after the producer")
    func elementResumesTheWaiterOnce() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        let source = NumberSource()
        consume(source, on: driver, into: trace)
        _ = try driver.step()  // the task looks, finds nothing and parks
        #expect(source.parks == 1)
        #expect(source.consumerWaits)
        try driver.loop.enqueue {
            trace.record("producer")
            source.produce(7)
            source.end(SourceFailure())  // nobody waits any more: the failure is kept, not handed over twice
            trace.record("producer done")
        }
        _ = try driver.runUntilIdle()
        #expect(trace.labels == ["producer", "producer done", "7"])
        #expect(!source.consumerWaits)
        #expect(source.buffer.isEmpty)
    }

    @Test("A waiting consumer is resumed exactly once by the end, with nil")
    func endResumesTheWaiterOnce() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        let source = NumberSource()
        consume(source, on: driver, into: trace)
        _ = try driver.step()
        #expect(source.consumerWaits)
        try driver.loop.enqueue {
            source.end(nil)
            source.end(SourceFailure())  // a second ending finds no waiter
        }
        _ = try driver.runUntilIdle()
        #expect(trace.labels == ["end"])
        #expect(!source.consumerWaits)
    }

    @Test("A waiting consumer is resumed exactly once by a failure, which it throws")
    func failureResumesTheWaiterOnce() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        let source = NumberSource()
        consume(source, on: driver, into: trace)
        _ = try driver.step()
        #expect(source.consumerWaits)
        try driver.loop.enqueue {
            source.end(SourceFailure())
            source.end(nil)
        }
        _ = try driver.runUntilIdle()
        #expect(trace.labels == ["the source failed"])
        #expect(!source.consumerWaits)
    }

    @Test("An element that arrives while the task hops to park is found by the second look: no parking")
    func elementArrivingDuringTheHopIsFoundBeforeParking() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        let source = NumberSource()
        source.arrivingDuringTheHop = 5
        consume(source, on: driver, into: trace)
        _ = try driver.step()
        #expect(trace.labels == ["5"])  // not left waiting for a producer that will not come again
        #expect(source.looks == 2)
        #expect(source.parks == 0)
        #expect(!source.consumerWaits)
    }

    @Test("Consecutive consumers, one after the other, each wait and are resumed")
    func consumersOneAfterAnotherAreServed() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        let source = NumberSource()
        for number in 1...3 {
            consume(source, on: driver, into: trace)
            _ = try driver.step()
            try driver.loop.enqueue { source.produce(number) }
            _ = try driver.runUntilIdle()
        }
        #expect(trace.labels == ["1", "2", "3"])
        #expect(source.parks == 3)
    }

    @Test("A second consumer while one waits stops the process, naming the sequence")
    func secondConsumerTraps() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let driver = try! LoopDriver()
            let trace = OrderTrace(driver.loop)
            let source = NumberSource()
            consume(source, on: driver, into: trace)
            consume(source, on: driver, into: trace)
            _ = try! driver.step()
        }
        let message = String(decoding: try #require(result).standardErrorContent, as: UTF8.self)
        #expect(message.contains("NumberSource.numbers has one consumer at a time"))
    }

    #if DEBUG
    @Test("A parked consumer dropped without being resumed stops a debug build (its task would wait forever)")
    func droppedConsumerTraps() async {
        await #expect(processExitsWith: .failure) {
            let driver = try! LoopDriver()
            let source = NumberSource()
            consume(source, on: driver, into: OrderTrace(driver.loop))
            _ = try! driver.step()
            _ = source.waiter.unpark()
        }
    }
    #endif
}
