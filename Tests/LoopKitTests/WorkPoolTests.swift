import Foundation
import LoopKit
import LoopKitTesting
import Synchronization
import Testing

/// A gate a pool thread waits at, so a test decides when the work it blocks may end.
final class Gate: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    func wait() { semaphore.wait() }
    func open(_ count: Int = 1) { for _ in 0..<count { semaphore.signal() } }
}

/// A count any thread can bump, captured by escaping closures (an `Atomic` cannot be).
final class Counter: Sendable {
    private let storage = Atomic<Int>(0)
    func bump() { storage.add(1, ordering: .relaxed) }
    var count: Int { storage.load(ordering: .relaxed) }
    var isZero: Bool { count == 0 }
}

/// Strings any thread can append to.
final class Strings: Sendable {
    private let storage = Mutex<[String]>([])
    func append(_ string: String) { storage.withLock { $0.append(string) } }
    var all: [String] { storage.withLock { $0 } }
}

/// The work pool and `loop.offload`: results, cancellation, the queue limit, observability, shutdown.
/// When completions run (R13) is in the ordering contract's suite.
@Suite("Work pool")
struct WorkPoolTests {
    @Test("offload returns the work's value, and rethrows its error, to the awaiting task")
    func offloadReturnsTheResult() async throws {
        let loop = try EventLoop()
        #expect(try await loop.offload { 6 * 7 } == 42)
        struct Failure: Error, Equatable {}
        await #expect(throws: Failure.self) { try await loop.offload { () throws -> Int in throw Failure() } }
    }

    @Test("The work runs on a pool thread, never on the caller's")
    func workRunsOnAPoolThread() async throws {
        let pool = try WorkPool(threads: 2, name: "test pool")
        defer { pool.shutdown() }
        let loop = try EventLoop()
        let onLoop = try await loop.offload(to: pool) { loop.isCurrent }
        #expect(onLoop == false)
        let name = try await pool.run { threadName() }
        #expect(name.hasPrefix("test pool"))
    }

    @Test("A task cancelled before its work starts gets CancellationError, and the work never runs")
    func cancelledBeforeStartNeverRuns() async throws {
        let pool = try WorkPool(threads: 1)
        defer { pool.shutdown() }
        let gate = Gate()
        let ran = Counter()
        let blocker = Task { try await pool.run { gate.wait() } }
        await pollUntil { pool.activeCount == 1 }
        let task = Task { try await pool.run { ran.bump() } }
        await pollUntil { pool.queuedCount == 1 }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(pool.queuedCount == 0)
        gate.open()
        try await blocker.value
        pool.waitUntilIdle()
        #expect(ran.isZero)

        // A task cancelled before it even offloads never queues anything.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await pool.run { ran.bump() }
        }
        await #expect(throws: CancellationError.self) { try await early.value }
        #expect(ran.isZero)
    }

    @Test("Work that has started runs to its end although its task is cancelled")
    func startedWorkRunsToTheEnd() async throws {
        let pool = try WorkPool(threads: 1)
        defer { pool.shutdown() }
        let gate = Gate()
        let task = Task { try await pool.run { gate.wait(); return "finished" } }
        await pollUntil { pool.activeCount == 1 }
        task.cancel()
        gate.open()
        #expect(try await task.value == "finished")
    }

    @Test("A full queue refuses work with WorkPoolError.queueFull and a message; nothing is kept")
    func fullQueueRefuses() async throws {
        let pool = try WorkPool(threads: 1, queueLimit: 2)
        defer { pool.shutdown() }
        let gate = Gate()
        let running = Task { try await pool.run { gate.wait() } }
        await pollUntil { pool.activeCount == 1 }
        let tasks = [running] + (0..<2).map { _ in Task { try await pool.run { gate.wait() } } }
        await pollUntil { pool.queuedCount == 2 }
        await #expect(throws: WorkPoolError.queueFull(limit: 2)) { try await pool.run { 1 } }
        #expect(WorkPoolError.queueFull(limit: 2).description.contains("queue is full (2 items"))
        #expect(pool.queuedCount == 2)
        gate.open(3)
        for task in tasks { try await task.value }
    }

    @Test("Size, queue limit, queue depth, active and completed counts are observable")
    func countsAreObservable() async throws {
        let pool = try WorkPool(threads: 3, queueLimit: 10, name: "counted")
        defer { pool.shutdown() }
        #expect(pool.threadCount == 3)
        #expect(pool.queueLimit == 10)
        #expect(pool.name == "counted")
        let gate = Gate()
        let tasks = (0..<5).map { _ in Task { try await pool.run { gate.wait() } } }
        await pollUntil { pool.activeCount == 3 && pool.queuedCount == 2 }
        gate.open(5)
        for task in tasks { try await task.value }
        pool.waitUntilIdle()
        #expect(pool.activeCount == 0 && pool.queuedCount == 0 && pool.completedCount == 5)
    }

    @Test("Work queued together runs in parallel, also when it reaches a thread still spinning after its last item")
    func queuedWorkRunsInParallel() async throws {
        let pool = try WorkPool(threads: 2, name: "parallel")
        defer { pool.shutdown() }
        for _ in 0..<200 {
            try await pool.run {}  // a thread that just ran work may spin for the next: it takes one item only
            // Each item waits for the other to start: they meet only on two threads at once.
            let first = DispatchSemaphore(value: 0), second = DispatchSemaphore(value: 0)
            async let one = pool.run { first.signal(); return second.wait(timeout: .now() + 10) == .success }
            async let two = pool.run { second.signal(); return first.wait(timeout: .now() + 10) == .success }
            let (oneMet, twoMet) = try await (one, two)
            try #require(oneMet && twoMet)
        }
    }

    @Test("The shared pool has one thread per CPU, at least two")
    func sharedPoolIsSizedFromTheCPUCount() {
        #expect(WorkPool.shared.threadCount == max(2, WorkPool.processorCount))
        #expect(WorkPool.processorCount == ProcessInfo.processInfo.activeProcessorCount)
    }

    @Test("Shutdown resumes every waiter exactly once: queued work with WorkPoolError.cancelled, running work with its result")
    func shutdownResumesEveryWaiter() async throws {
        let pool = try WorkPool(threads: 1)
        let gate = Gate()
        let ran = Counter()
        let running = Task { try await pool.run { gate.wait(); return "ran" } }
        await pollUntil { pool.activeCount == 1 }
        let queued = (0..<3).map { _ in Task { try await pool.run { ran.bump() } } }
        await pollUntil { pool.queuedCount == 3 }
        pool.shutdown()
        pool.shutdown()  // harmless
        #expect(pool.isShutDown)
        for task in queued { await #expect(throws: WorkPoolError.cancelled) { try await task.value } }
        await #expect(throws: WorkPoolError.shutDown) { try await pool.run { 1 } }
        gate.open()
        #expect(try await running.value == "ran")
        pool.waitUntilIdle()
        #expect(ran.isZero)
    }

    @Test("The callback form runs its completion on the loop's thread, once, with the work's outcome")
    func callbackCompletionRunsOnTheLoop() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let outcomes = Strings()
        struct Failure: Error {}
        try loop.offload({ 21 * 2 }) { result in
            outcomes.append("\(try! result.get()) on loop: \(loop.isCurrent)")
        }
        try loop.offload({ () throws -> Int in throw Failure() }) { result in
            outcomes.append(result.failure is Failure ? "failure" : "?")
        }
        WorkPool.shared.waitUntilIdle()
        try driver.runUntilIdle()
        #expect(outcomes.all.sorted() == ["42 on loop: true", "failure"])
    }

    @Test("The callback form is refused off the loop's thread and after shutdown; its completion is never called")
    func callbackFormMisuse() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let called = Counter()
        let offThread = onAnotherThread { () -> (any Error)? in
            do {
                try loop.offload({ 1 }) { _ in called.bump() }
                return nil
            } catch { return error }
        }
        #expect(offThread as? EventLoopError == .wrongThread(operation: "offload(to:_:completion:)"))
        loop.shutdown()
        #expect(throws: EventLoopError.shutDown) { try loop.offload({ 1 }) { _ in called.bump() } }
        #expect(called.isZero)
    }

    @Test("A full pool refuses the callback form with queueFull; its completion is never called")
    func callbackFormQueueFull() throws {
        let driver = try LoopDriver()
        let pool = try WorkPool(threads: 1, queueLimit: 1)
        defer { pool.shutdown() }
        let gate = Gate()
        let completions = Counter()
        try driver.loop.offload(to: pool, { gate.wait() }) { _ in completions.bump() }
        spin { pool.activeCount == 1 }
        try driver.loop.offload(to: pool, { () }) { _ in completions.bump() }
        #expect(throws: WorkPoolError.queueFull(limit: 1)) {
            try driver.loop.offload(to: pool, { () }) { _ in completions.bump() }
        }
        gate.open()
        pool.waitUntilIdle()
        try driver.runUntilIdle()
        #expect(completions.count == 2)
    }

    @Test("Refused work keeps nothing: its work and completion are released at once, and its loop with them")
    func refusedWorkIsReleased() throws {
        final class Witness: Sendable {}
        let pool = try WorkPool(threads: 1, queueLimit: 1)
        defer { pool.shutdown() }
        let gate = Gate()
        weak var refusedWitness: Witness?
        weak var refusedLoop: EventLoop?
        do {
            let driver = try LoopDriver()
            refusedLoop = driver.loop
            try driver.loop.offload(to: pool, { gate.wait() }) { _ in }
            spin { pool.activeCount == 1 }
            try driver.loop.offload(to: pool, { () }) { _ in }
            let witness = Witness()
            refusedWitness = witness
            #expect(throws: WorkPoolError.queueFull(limit: 1)) {
                try driver.loop.offload(to: pool, { _ = witness }) { _ in _ = witness }
            }
            #expect(refusedWitness != nil)  // still held here, by `witness`
            gate.open()
            pool.waitUntilIdle()
            try driver.runUntilIdle()
            driver.loop.shutdown()
        }
        #expect(refusedWitness == nil)
        #expect(refusedLoop == nil)
    }

    @Test("Cancelling offloaded work before it starts completes it with CancellationError on the loop, in a later drain")
    func cancellingTheHandle() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let pool = try WorkPool(threads: 1)
        defer { pool.shutdown() }
        let gate = Gate()
        let trace = OrderTrace(loop)
        let running = try loop.offload(to: pool, { gate.wait() }) { _ in trace.record("first done") }
        spin { pool.activeCount == 1 }
        let ran = Counter()
        let waiting = try loop.offload(to: pool, { ran.bump() }) { result in
            trace.record(result.failure is CancellationError ? "second cancelled" : "second ran")
        }
        #expect(waiting.cancel() == true)
        #expect(waiting.cancel() == false)
        #expect(running.cancel() == false)  // started: runs to its end
        #expect(trace.labels.isEmpty)
        try driver.step()
        #expect(trace.description == "1:second cancelled")
        gate.open()
        pool.waitUntilIdle()
        try driver.step()
        #expect(trace.description == "1:second cancelled 2:first done")
        #expect(ran.isZero)
    }

    @Test("A pool that shuts down completes the callback form's queued work with WorkPoolError.cancelled, on the loop")
    func poolShutdownCompletesQueuedCallbacks() throws {
        let driver = try LoopDriver()
        let pool = try WorkPool(threads: 1)
        let gate = Gate()
        let trace = OrderTrace(driver.loop)
        try driver.loop.offload(to: pool, { gate.wait(); return 1 }) { trace.record("A \(($0.failure as? WorkPoolError).map { "\($0)" } ?? "ran")") }
        spin { pool.activeCount == 1 }
        try driver.loop.offload(to: pool, { 2 }) { trace.record("B \($0.failure as? WorkPoolError == .cancelled ? "cancelled" : "ran")") }
        try driver.loop.offload(to: pool, { 3 }) { trace.record("C \($0.failure as? WorkPoolError == .cancelled ? "cancelled" : "ran")") }
        pool.shutdown()
        gate.open()
        pool.waitUntilIdle()
        try driver.runUntilIdle()
        #expect(trace.labels == ["B cancelled", "C cancelled", "A ran"])
    }

    @Test("A loop that shuts down before its offloaded work ends completes it once with EventLoopError.cancelled")
    func loopShutdownCompletesPendingCallbacks() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let pool = try WorkPool(threads: 1)
        defer { pool.shutdown() }
        let gate = Gate()
        let started = DispatchSemaphore(value: 0)
        let outcomes = Strings()
        try loop.offload(to: pool, { started.signal(); gate.wait(); return 1 }) { result in
            outcomes.append(result.failure as? EventLoopError == .cancelled ? "cancelled" : "ran")
        }
        let ran = Counter()
        try loop.offload(to: pool, { ran.bump() }) { result in
            outcomes.append(result.failure as? EventLoopError == .cancelled ? "cancelled" : "ran")
        }
        // The pool's one thread holds the first work (a state, not an order): had the shutdown cancelled the
        // first before it started, the freed thread could take the second before its cancellation came.
        started.wait()
        loop.shutdown()
        #expect(outcomes.all == ["cancelled", "cancelled"])
        gate.open()  // the running work ends; its result is dropped
        pool.waitUntilIdle()
        #expect(outcomes.all.count == 2)
        #expect(ran.isZero)
    }

    @Test("Work that ends while its loop shuts down still completes with its result")
    func workEndingDuringTheFinalDrainIsDelivered() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let pool = try WorkPool(threads: 1)
        defer { pool.shutdown() }
        let outcome = Strings()
        try loop.offload(to: pool, { 5 }) { result in outcome.append("\((try? result.get()) ?? -1)") }
        pool.waitUntilIdle()  // the completion is queued
        loop.shutdown()       // its final drain runs it
        #expect(outcome.all == ["5"])
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

/// Polls `condition` until it holds, suspending between polls: a state to wait for, not an order (a
/// busy `Task.yield` loop can keep the tasks it waits for off the cooperative pool's threads).
func pollUntil(_ condition: () -> Bool) async {
    while !condition() { try? await Task.sleep(for: .milliseconds(1)) }
}

/// The calling thread's kernel name (`/proc/thread-self/comm`).
private func threadName() -> String {
    let text = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
    return text.trimmingCharacters(in: .newlines)
}
