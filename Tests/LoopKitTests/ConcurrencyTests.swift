@testable import LoopKit
import LoopKitTesting
import Synchronization
import Testing

/// A loop as a Swift concurrency executor, and `perform`.
@Suite("Swift concurrency")
struct ConcurrencyTests {
    actor Counter {
        let loop: EventLoop
        var values: [Int] = []
        init(loop: EventLoop) { self.loop = loop }
        nonisolated var unownedExecutor: UnownedSerialExecutor { loop.unownedExecutor }
        func append(_ value: Int) -> Bool {
            values.append(value)
            return loop.isCurrent
        }
    }

    @Test("an actor pinned to a loop runs on the loop's thread, in order")
    func pinnedActor() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let counter = Counter(loop: group.next())
        var allOnLoop = true
        for value in 0..<100 { allOnLoop = await counter.append(value) && allOnLoop }
        #expect(allOnLoop)
        #expect(await counter.values == Array(0..<100))
    }

    @Test("a task preferring a loop as its task executor runs on the loop's thread")
    func taskExecutor() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.next()
        let onLoop = await Task(executorPreference: loop) { loop.isCurrent }.value
        #expect(onLoop)
    }

    /// A task's job keeps its place in the queue among closures.
    @Test("a task's jobs run in FIFO order with the closures queued around them")
    func taskJobsKeepTheirPlace() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let trace = Lock<[String]>([])
        try loop.enqueue { trace.withLock { $0.append("before") } }
        _ = Task(executorPreference: loop) {
            trace.withLock { $0.append("task, first job") }
            await Task.yield()  // its next job goes to the back of the queue
            trace.withLock { $0.append("task, second job") }
        }
        try loop.enqueue { trace.withLock { $0.append("after") } }
        try driver.runUntilIdle()
        #expect(trace.withLock { $0 } == ["before", "task, first job", "after", "task, second job"])
    }

    @Test("a task preferring a loop that has finished shutting down goes on off the loop, not trapped or dropped")
    func taskPreferringAShutDownLoop() async throws {
        let group = try LoopGroup(threads: 1)
        let loop = group.next()
        group.shutdown()
        let ranOnLoop = await Task(executorPreference: loop) { () async -> Bool in
            await Task.yield()  // suspends and resumes: each job goes to the global executor
            return loop.isCurrent
        }.value
        #expect(ranOnLoop == false)
    }

    @Test("perform hops onto the loop, returns the value and rethrows the error")
    func perform() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.next()
        #expect(try await loop.perform { loop.isCurrent })
        struct Failure: Error {}
        await #expect(throws: Failure.self) { try await loop.perform { throw Failure() } }
        loop.shutdown()
        await #expect(throws: EventLoopError.self) { try await loop.perform { 1 } }
    }
}
