import Foundation
import LoopKit
import LoopKitTesting
import Synchronization
import Testing

/// Running, stopping and misusing a loop.
@Suite("EventLoop")
struct EventLoopTests {
    @Test("run off the loop's thread is refused with wrongThread")
    func runFromAnotherThread() throws {
        let loop = try EventLoop()
        let error = onAnotherThread { () -> EventLoopError? in
            do throws(EventLoopError) { try loop.run(); return nil } catch { return error }
        }
        #expect(error == .wrongThread(operation: "run()"))
        #expect(error?.description.contains("loop's own thread") == true)
    }

    @Test("stop from another thread makes run return after the iteration in progress")
    func stopFromAnotherThread() throws {
        let loop = try EventLoop()
        let ran = Atomic<Bool>(false)
        try loop.enqueue {
            ran.store(true, ordering: .relaxed)
            startThread { loop.stop() }
        }
        try loop.run()
        #expect(ran.load(ordering: .relaxed) == true)
        #expect(!loop.isRunning)
    }

    @Test("stop on the loop's thread ends run after the current iteration")
    func stopOnLoopThread() throws {
        let loop = try EventLoop()
        let trace = OrderTrace(loop)
        try loop.enqueue {
            trace.record("stop")
            loop.stop()
            try! loop.enqueue { trace.record("next") }
        }
        try loop.run()
        #expect(trace.description == "1:stop")
        try loop.runOnce(blocking: false)
        #expect(trace.description == "1:stop 2:next")
    }

    @Test("shutdown from another thread ends run after running the queued work")
    func shutdownFromAnotherThread() throws {
        let loop = try EventLoop()
        let trace = OrderTrace(loop)
        try loop.enqueue {
            startThread {
                try? loop.enqueue { trace.record("queued before shutdown") }
                loop.shutdown()
            }
        }
        try loop.run()
        #expect(trace.labels == ["queued before shutdown"])
        #expect(!loop.isAcceptingWork)
        #expect(throws: EventLoopError.shutDown) { try loop.run() }
    }

    @Test("invoke and invokeAndWait after shutdown are refused")
    func invokeAfterShutdown() throws {
        let loop = try EventLoop()
        loop.shutdown()
        #expect(throws: EventLoopError.shutDown) { try loop.invoke {} }
        #expect(throws: EventLoopError.shutDown) { try loop.invokeAndWait { 1 } }
        let remote = onAnotherThread { () -> Bool in
            (try? loop.invokeAndWait { 1 }) == nil
        }
        #expect(remote)
    }

    @Test("a loop dropped with work still queued reports that work cancelled")
    func deinitCancelsQueuedWork() throws {
        var loop: EventLoop? = onAnotherThread { try! EventLoop() }  // nobody will ever run it
        // From a thread that is not the loop's, the timer travels through the queue to the loop.
        let timer = try loop!.schedule(after: .zero) {}
        #expect(!timer.isCancelled)
        loop = nil
        #expect(timer.isCancelled)
    }

    @Test("EventLoop.current is the loop running an iteration on this thread")
    func currentLoop() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        #expect(EventLoop.current == nil)
        let matched = Atomic<Bool>(false)
        try loop.enqueue { matched.store(EventLoop.current === loop, ordering: .relaxed) }
        try driver.step()
        #expect(matched.load(ordering: .relaxed) == true)
        #expect(loop.isCurrent)
        #expect(onAnotherThread { !loop.isCurrent })
    }

    @Test("runOnce returns the number of callbacks it ran")
    func runOnceCounts() throws {
        let driver = try LoopDriver()
        for _ in 0..<3 { try driver.loop.enqueue {} }
        try driver.loop.schedule(after: .zero) {}
        #expect(try driver.step() == 4)
        #expect(try driver.step() == 0)
    }

    @Test("a drain limit below one is refused")
    func badDrainLimit() {
        #expect(throws: EventLoopError.invalidArgument("drainLimit must be at least 1, got 0")) {
            try EventLoop(drainLimit: 0)
        }
    }

    @Test("the loop reports libevent's version and backend")
    func identity() throws {
        let loop = try EventLoop()
        #expect(EventLoop.libeventVersion.hasPrefix("2."))
        #expect(!loop.backend.isEmpty)
    }
}

/// Misuse that must stop the process: programmer errors, not recoverable conditions.
@Suite("EventLoop preconditions")
struct EventLoopPreconditionTests {
    @Test("checkIsolated off the loop's thread stops the process")
    func checkIsolatedOffThread() async {
        await #expect(processExitsWith: .failure) {
            let loop = onAnotherThread { try! EventLoop() }
            loop.checkIsolated()
        }
    }

    @Test("an actor pinned to a loop that has finished shutting down, given work, stops the process")
    func actorJobAfterShutdown() async {
        await #expect(processExitsWith: .failure) {
            actor Pinned {
                let loop: EventLoop
                init(loop: EventLoop) { self.loop = loop }
                nonisolated var unownedExecutor: UnownedSerialExecutor { loop.unownedExecutor }
                func touch() {}
            }
            let loop = try! EventLoop()
            loop.shutdown()
            await Pinned(loop: loop).touch()
        }
    }
}
