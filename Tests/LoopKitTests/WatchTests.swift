import Foundation
import LoopKit
import LoopKitTesting
import Synchronization
import Testing

/// File-descriptor and signal watches.
@Suite("Watches")
struct WatchTests {
    @Test("a readable watch fires while data is pending and stops when cancelled")
    func readable() throws {
        let driver = try LoopDriver()
        let pipe = TestPipe()
        defer { pipe.close() }
        let events = Lock<[IOEvents]>([])
        let watch = try driver.loop.watch(pipe.readEnd, for: .readable) { ready in
            events.withLock { $0.append(ready) }
        }
        try driver.step()
        #expect(events.withLock { $0.isEmpty })
        pipe.makeReadable()
        try driver.step(2)  // level-triggered: still readable in the second iteration
        #expect(events.withLock { $0 } == [.readable, .readable])
        watch.cancel()
        watch.cancel()
        try driver.step()
        #expect(events.withLock { $0.count } == 2)
        #expect(watch.isFinished)
    }

    @Test("a loop that watches nothing skips its empty poll; a watch makes each iteration poll again")
    func emptyPollSkipped() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        try driver.step(3)
        #expect(loop.skippedPolls == 3)
        let pipe = TestPipe()
        defer { pipe.close() }
        let events = Lock<[IOEvents]>([])
        let watch = try loop.watch(pipe.readEnd, for: .readable) { ready in events.withLock { $0.append(ready) } }
        try driver.step(2)
        #expect(loop.skippedPolls == 3)
        pipe.makeReadable()
        try driver.step()
        #expect(events.withLock { $0 } == [.readable])  // seen in the first iteration after it became ready
        watch.pause()
        try driver.step(2)
        #expect(loop.skippedPolls == 5)
        #expect(events.withLock { $0.count } == 1)
        try watch.resume()
        try driver.step()
        #expect(events.withLock { $0.count } == 2)
        #expect(loop.skippedPolls == 5)
        watch.cancel()
    }

    @Test("after a wait, the loop's next poll that does not wait is a real one, taking a wake-up still on its way")
    func firstPollAfterAWaitIsReal() throws {
        let loop = try EventLoop()  // real time: the loop announces its wait and waits for the timer
        try loop.schedule(after: .milliseconds(1)) {}
        try loop.runOnce(blocking: true)
        let skipped = loop.skippedPolls
        try loop.enqueue {}
        try loop.runOnce(blocking: true)  // work queued: no wait, and a real poll (a pusher may still write)
        #expect(loop.skippedPolls == skipped)
        try loop.enqueue {}
        try loop.runOnce(blocking: true)  // then skipped again
        #expect(loop.skippedPolls == skipped + 1)
        loop.shutdown()
    }

    @Test("a paused watch reports nothing until resumed, and pausing twice or resuming twice does nothing")
    func pauseAndResume() throws {
        let driver = try LoopDriver()
        let pipe = TestPipe()
        defer { pipe.close() }
        let fired = Atomic<Int>(0)
        let watch = try driver.loop.watch(pipe.readEnd, for: .readable) { _ in fired.add(1, ordering: .relaxed) }
        pipe.makeReadable()
        watch.pause()
        watch.pause()
        #expect(!watch.isActive)
        try driver.step(3)
        #expect(fired.load(ordering: .relaxed) == 0)  // readable all along, but paused
        try watch.resume()
        try watch.resume()
        #expect(watch.isActive)
        try driver.step()
        #expect(fired.load(ordering: .relaxed) == 1)
        watch.cancel()
        try watch.resume()  // a finished watch stays finished
        #expect(!watch.isActive)
        try driver.step()
        #expect(fired.load(ordering: .relaxed) == 1)
    }

    @Test("a writable watch reports writable")
    func writable() throws {
        let driver = try LoopDriver()
        let pipe = TestPipe()
        defer { pipe.close() }
        let seen = Atomic<Bool>(false)
        let watch = try driver.loop.watch(pipe.writeEnd, for: .writable) { ready in
            seen.store(ready == .writable, ordering: .relaxed)
        }
        try driver.step()
        #expect(seen.load(ordering: .relaxed) == true)
        watch.cancel()
    }

    @Test("bad descriptors and empty event sets are refused; watching off-thread is refused")
    func badInput() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        #expect(throws: EventLoopError.invalidArgument("file descriptor must not be negative, got -1")) {
            try loop.watch(-1, for: .readable) { _ in }
        }
        #expect(throws: EventLoopError.self) { try loop.watch(0, for: []) { _ in } }
        let error = onAnotherThread { () -> EventLoopError? in
            do throws(EventLoopError) { _ = try loop.watch(0, for: .readable) { _ in }; return nil } catch { return error }
        }
        #expect(error == .wrongThread(operation: "watch(_:for:_:)"))
    }

    @Test("a signal handler runs on the loop as an ordinary callback")
    func signal() throws {
        let loop = try EventLoop()
        let caught = Atomic<Int>(0)
        let watch = try loop.onSignal(SIGUSR1) {
            caught.add(1, ordering: .relaxed)
            loop.stop()
        }
        try loop.enqueue { kill(getpid(), SIGUSR1) }
        try loop.run()
        #expect(caught.load(ordering: .relaxed) == 1)
        watch.cancel()
    }

    @Test("isFinished off the loop's thread stops the process, in release builds too")
    func isFinishedOffTheLoopThreadTraps() async {
        await #expect(processExitsWith: .failure) {
            let loop = try! EventLoop()
            let pipe = TestPipe()
            let watch = try! loop.watch(pipe.readEnd, for: .readable) { _ in }
            onAnotherThread { _ = watch.isFinished }
        }
    }
}
