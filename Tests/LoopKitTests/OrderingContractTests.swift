import Foundation
import LoopKit
import LoopKitTesting
import Synchronization
import Testing

/// The ordering contract, R1–R13: one test per rule, each deterministic (iterations are stepped and
/// time is virtual; R12, the main loop's, runs in a program of its own whose main thread it needs).
@Suite("Ordering contract")
struct OrderingContractTests {
    @Test("R1: work runs in enqueue order, and each producer thread's order is kept")
    func fifo() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        for label in ["A", "B", "C", "D"] { try driver.loop.enqueue { trace.record(label) } }
        try driver.step()
        #expect(trace.description == "1:A 1:B 1:C 1:D")

        // Two producer threads, each queuing its own numbered sequence.
        let loop = driver.loop
        let seen = Lock<[Int: [Int]]>([:])
        DispatchQueue.concurrentPerform(iterations: 2) { producer in
            for n in 0..<2_000 {
                try! loop.enqueue { seen.withLock { $0[producer, default: []].append(n) } }
            }
        }
        try driver.runUntilIdle()
        let runs = seen.withLock { $0 }
        #expect(runs[0] == Array(0..<2_000))
        #expect(runs[1] == Array(0..<2_000))

        // Work another thread queued before the loop thread queues its own runs first.
        let mixed = OrderTrace(loop)
        onAnotherThread { try! loop.enqueue { mixed.record("remote") } }
        try loop.enqueue { mixed.record("local") }
        onAnotherThread { try! loop.enqueue { mixed.record("remote-after") } }
        try driver.step()
        #expect(mixed.labels == ["remote", "local", "remote-after"])
    }

    @Test("R2: work queued from the drain of iteration N runs in N+1, never in N")
    func workQueuedByTheDrainWaitsForTheNextIteration() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let trace = OrderTrace(loop)
        try loop.enqueue {
            trace.record("A")
            try! loop.enqueue { trace.record("B") }
            trace.record("A-end")
        }
        try driver.step()
        #expect(trace.description == "1:A 1:A-end")
        try driver.step()
        #expect(trace.description == "1:A 1:A-end 2:B")
    }

    @Test("R2: work queued from an I/O or timer callback runs in the same iteration's drain, after the callback returned")
    func workQueuedInPhaseTwoRunsInThatIterationsDrain() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let trace = OrderTrace(loop)
        let pipe = TestPipe()
        defer { pipe.close() }
        let watch = try loop.watch(pipe.readEnd, for: .readable) { _ in
            pipe.drain()
            try! loop.enqueue {
                trace.record("from-io")
                try! loop.enqueue { trace.record("from-io's-job") }
            }
            trace.record("io")
        }
        try loop.schedule(after: .milliseconds(5)) {
            try! loop.enqueue {
                trace.record("from-timer")
                try! loop.enqueue { trace.record("from-timer's-job") }
            }
            trace.record("timer")
        }
        try loop.enqueue { trace.record("queued-before") }
        pipe.makeReadable()
        try driver.step()
        // Phase 2 queued after "queued-before" (FIFO), and the drain took it: the same iteration.
        #expect(trace.description == "1:io 1:queued-before 1:from-io")
        try driver.step()
        #expect(trace.description == "1:io 1:queued-before 1:from-io 2:from-io's-job")
        try driver.advance(by: .milliseconds(5))  // iteration 3 at the timer's deadline, then iteration 4
        #expect(trace.description == "1:io 1:queued-before 1:from-io 2:from-io's-job 3:timer 3:from-timer 4:from-timer's-job")
        watch.cancel()
    }

    @Test("R3: work enqueued during iteration N runs in N+1; with a drain limit FIFO still holds")
    func alwaysTheNext() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let trace = OrderTrace(loop)
        @Sendable func chain(_ n: Int) {
            trace.record("c\(n)")
            if n < 4 { try! loop.enqueue { chain(n + 1) } }
        }
        try loop.enqueue { chain(0) }
        try driver.step(5)
        #expect(trace.description == "1:c0 2:c1 3:c2 4:c3 5:c4")

        let limited = try LoopDriver(drainLimit: 2)
        let limitedTrace = OrderTrace(limited.loop)
        for label in ["a", "b", "c", "d", "e"] { try limited.loop.enqueue { limitedTrace.record(label) } }
        try limited.step()
        try limited.loop.enqueue { limitedTrace.record("f") }
        try limited.runUntilIdle()
        #expect(limitedTrace.description == "1:a 1:b 2:c 2:d 3:e 3:f")
    }

    @Test("R4: a ready fd is served even when every iteration enqueues more work")
    func noStarvation() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let trace = OrderTrace(loop)
        let pipe = TestPipe()
        defer { pipe.close() }
        @Sendable func busy() {
            trace.record("busy")
            try! loop.enqueue(busy)
        }
        try loop.enqueue(busy)
        try driver.step()
        pipe.makeReadable()
        let watch = try loop.watch(pipe.readEnd, for: .readable) { _ in
            pipe.drain()
            trace.record("io")
        }
        try driver.step(2)
        #expect(trace.description == "1:busy 2:io 2:busy 3:busy")
        watch.cancel()
    }

    @Test("R5: invoke runs inline on the loop thread and enqueues from another thread")
    func inlineInvoke() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let trace = OrderTrace(loop)
        try loop.invoke { trace.record("inline") }
        #expect(trace.labels == ["inline"])

        try loop.enqueue { trace.record("queued") }
        onAnotherThread { try! loop.invoke { trace.record("remote") } }
        #expect(trace.labels == ["inline"])
        try driver.step()
        #expect(trace.labels == ["inline", "queued", "remote"])
    }

    @Test("R6: invokeAndWait runs inline on the loop thread, waits elsewhere, and never hangs on shutdown")
    func waitWithoutDeadlock() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        #expect(try loop.invokeAndWait { 42 } == 42)

        // From another thread: the value comes back, and the error is rethrown.
        struct Failure: Error {}
        let outcome = ResultBox<(Int?, Bool)>()
        let done = startThread {
            let value = try? loop.invokeAndWait { 7 }
            let threw = (try? loop.invokeAndWait { () throws -> Int in throw Failure() }) == nil
            outcome.set((value, threw))
        }
        var served = 0
        while served < 2 { served += try loop.runOnce(blocking: true) }
        done.wait()
        #expect(outcome.get().0 == 7)
        #expect(outcome.get().1)

        // The loop shuts down while a waiter's work is queued: the work still runs (R10) and the waiter
        // gets its value; a waiter arriving after the shutdown gets an error at once. Nobody hangs.
        let waiterValue = ResultBox<Int?>()
        let waiter = startThread { waiterValue.set(try? loop.invokeAndWait { 1 }) }
        spin { loop.hasQueuedWork }
        loop.shutdown()
        waiter.wait()
        #expect(waiterValue.get() == 1)
        let late = onAnotherThread { () -> EventLoopError? in
            do { _ = try loop.invokeAndWait { 1 }; return nil } catch { return error as? EventLoopError }
        }
        #expect(late == .shutDown)
    }

    @Test("R7: a cross-thread enqueue wakes a blocked loop, at most once per iteration however many jobs come")
    func neverLost() throws {
        let loop = try EventLoop()
        let ran = Atomic<Int>(0)
        // The loop blocks in its poll; the other thread's enqueues must wake it (a lost wake-up hangs here).
        let iterationsBefore = loop.iteration
        let wakeUpsBefore = loop.wakeUpCount
        let producer = startThread {
            for _ in 0..<10_000 { try! loop.enqueue { ran.add(1, ordering: .relaxed) } }
        }
        while ran.load(ordering: .relaxed) < 10_000 { try loop.runOnce(blocking: true) }
        producer.wait()
        #expect(loop.wakeUpCount - wakeUpsBefore <= loop.iteration - iterationsBefore)
    }

    @Test("R7: jobs queued while the loop is not waiting in its poll cost no wake-up, and none is lost")
    func noWakeUpForARunningLoop() throws {
        let loop = try EventLoop()
        let ran = Atomic<Int>(0)
        let before = loop.wakeUpCount
        onAnotherThread {
            for _ in 0..<10_000 { try! loop.enqueue { ran.add(1, ordering: .relaxed) } }
        }
        #expect(loop.wakeUpCount == before)
        // The loop looks at its inbox before it would wait: it does not block with the jobs queued.
        try loop.runOnce(blocking: true)
        #expect(ran.load(ordering: .relaxed) == 10_000)
    }

    @Test("R8: timers fire in (deadline, scheduling order), never early; zero delay waits an iteration")
    func timers() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let trace = OrderTrace(loop)
        try loop.schedule(after: .milliseconds(10)) { trace.record("t1@10") }
        try loop.schedule(after: .milliseconds(5)) { trace.record("t2@5") }
        try loop.schedule(after: .milliseconds(10)) { trace.record("t3@10") }
        try loop.schedule(after: .milliseconds(5)) { trace.record("t4@5") }
        try driver.advance(by: .milliseconds(4))
        #expect(trace.labels.isEmpty)
        try driver.advance(by: .milliseconds(6))
        #expect(trace.labels == ["t2@5", "t4@5", "t1@10", "t3@10"])

        let zero = OrderTrace(loop)
        try loop.enqueue {
            zero.record("job")
            try! loop.schedule(after: .zero) { zero.record("timer") }
        }
        let start = loop.iteration
        try driver.step(2)
        #expect(zero.entries.map(\.iteration) == [start + 1, start + 2])
    }

    @Test("R9: phases run I/O, then timers, then the queue; the iteration counter is public")
    func phases() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let trace = OrderTrace(loop)
        let pipe = TestPipe()
        defer { pipe.close() }
        try loop.enqueue { trace.record("queue") }
        try loop.schedule(after: .zero) { trace.record("timer") }
        let watch = try loop.watch(pipe.readEnd, for: .readable) { _ in
            pipe.drain()
            trace.record("io")
        }
        pipe.makeReadable()
        #expect(loop.iteration == 0)
        try driver.step()
        #expect(trace.description == "1:io 1:timer 1:queue")
        #expect(loop.iteration == 1)
        watch.cancel()
    }

    @Test("R10: shutdown runs what was queued, cancels timers and watches, and refuses later work")
    func shutdown() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let trace = OrderTrace(loop)
        let pipe = TestPipe()
        defer { pipe.close() }
        try loop.enqueue { trace.record("A") }
        try loop.enqueue { trace.record("B") }
        let timer = try loop.schedule(after: .seconds(1)) { trace.record("timer") }
        let watch = try loop.watch(pipe.readEnd, for: .readable) { _ in trace.record("io") }
        loop.shutdown()
        #expect(trace.labels == ["A", "B"])
        #expect(timer.isCancelled)
        #expect(watch.isFinished)
        #expect(throws: EventLoopError.shutDown) { try loop.enqueue { trace.record("late") } }
        #expect(throws: EventLoopError.shutDown) { try loop.schedule(after: .zero) {} }
        #expect(throws: EventLoopError.shutDown) { try loop.runOnce() }
        loop.shutdown()  // twice: nothing happens
        #expect(trace.labels == ["A", "B"])
    }

    @Test("R11: running the loop from inside its own callback fails with a clear error")
    func noReentry() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let errors = Lock<[EventLoopError]>([])
        try loop.enqueue {
            do throws(EventLoopError) { try loop.runOnce(blocking: false) } catch { errors.withLock { $0.append(error) } }
            do throws(EventLoopError) { try loop.run() } catch { errors.withLock { $0.append(error) } }
        }
        try driver.step()
        #expect(errors.withLock { $0 } == [.reentrantRun, .reentrantRun])
        #expect(EventLoopError.reentrantRun.description.contains("inside the loop's own callbacks"))
    }

    @Test("R12: the main loop runs Dispatch's main queue at the end of phase 2, after I/O and timers, before the drain")
    func mainQueueRunsAtTheEndOfPhaseTwo() throws {
        // Queued before iteration 1: a job, a zero-delay timer, a main-queue block and a @MainActor task.
        #expect(try mainLoopProbe("phases") == [
            "1 timer: due",
            // Phase 2c: the main queue as it was when it began, in its own order, the timer's block included.
            "1 main queue: queued before the iteration",
            "1 main actor: task started before the iteration",
            "1 main queue: queued from a timer",
            // Phase 3: the drain; a job the main queue enqueued runs in it, as one from a callback would (R2).
            "1 drain: queued before the iteration",
            "1 drain: queued from the main queue",
            // Blocks queued during phase 2c or 3 run in the next iteration's phase 2c.
            "2 main queue: queued from the main queue",
            "2 main queue: queued from the drain",
        ])
    }

    @Test("R13: an offloaded work's completion runs in the first drain after the work ended, never inside a callback, in the order the work ended")
    func offloadCompletionsRunInTheDrain() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let pool = try WorkPool(threads: 1)
        defer { pool.shutdown() }
        let trace = OrderTrace(loop)

        // From outside an iteration: never inside the call, even for instant work; FIFO with other work.
        try loop.offload(to: pool, { "A" }) { trace.record("done " + ((try? $0.get()) ?? "?")) }
        try loop.offload(to: pool, { "B" }) { trace.record("done " + ((try? $0.get()) ?? "?")) }
        #expect(trace.labels.isEmpty)
        pool.waitUntilIdle()  // both completions are queued now, in the order their work ended
        try loop.enqueue { trace.record("queued after") }
        try driver.step()
        #expect(trace.description == "1:done A 1:done B 1:queued after")

        // Offloaded from the drain of N (and ended before that drain returned): it runs in N + 1 (R2).
        let fromDrain = OrderTrace(loop)
        try loop.enqueue {
            try! loop.offload(to: pool, { () }) { _ in fromDrain.record("completion") }
            pool.waitUntilIdle()
            fromDrain.record("drain")
        }
        try driver.step()
        try driver.step()
        #expect(fromDrain.description == "2:drain 3:completion")

        // Offloaded from a timer callback (phase 2) of N: it runs in the drain of N, after the callback.
        let fromTimer = OrderTrace(loop)
        try loop.schedule(after: .milliseconds(1)) {
            try! loop.offload(to: pool, { () }) { _ in fromTimer.record("completion") }
            pool.waitUntilIdle()
            fromTimer.record("timer")
        }
        try driver.advance(by: .milliseconds(1))
        #expect(fromTimer.description == "4:timer 4:completion")

        // The async form: a task on the loop that suspended goes on in a later drain, once the work ended.
        let fromTask = OrderTrace(loop)
        let gate = DispatchSemaphore(value: 0)
        Task(executorPreference: loop) {
            let value = try await loop.offload(to: pool) { gate.wait(); return 7 }
            fromTask.record("resumed \(value) on the loop: \(loop.isCurrent)")
        }
        try driver.step()  // the task starts in this drain, offloads and suspends (the work waits at the gate)
        gate.signal()
        pool.waitUntilIdle()
        #expect(fromTask.labels.isEmpty)
        try driver.step()
        #expect(fromTask.description == "7:resumed 7 on the loop: true")
    }
}
