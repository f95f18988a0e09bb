@testable import LoopKit
import LoopKitTesting
import Synchronization
import Testing

/// One-shot and repeating timers on virtual and real time.
@Suite("Timers")
struct TimerTests {
    @Test("a repeating timer fires once per period as virtual time passes")
    func repeating() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        let timer = try driver.loop.schedule(after: .milliseconds(10), repeating: .milliseconds(10)) {
            trace.record("tick@\(driver.clock.nanoseconds() / 1_000_000)")
        }
        try driver.advance(by: .milliseconds(35))
        #expect(trace.labels == ["tick@10", "tick@20", "tick@30"])
        #expect(timer.isRepeating)
        timer.cancel()
        try driver.advance(by: .milliseconds(50))
        #expect(trace.labels.count == 3)
    }

    @Test("cancelling a timer twice, or after it fired, does nothing")
    func cancelTwice() throws {
        let driver = try LoopDriver()
        let fired = Atomic<Int>(0)
        let cancelled = try driver.loop.schedule(after: .milliseconds(1)) { fired.add(1, ordering: .relaxed) }
        cancelled.cancel()
        cancelled.cancel()
        #expect(cancelled.isCancelled)
        let oneShot = try driver.loop.schedule(after: .milliseconds(1)) { fired.add(1, ordering: .relaxed) }
        try driver.advance(by: .milliseconds(2))
        oneShot.cancel()
        #expect(oneShot.isFinished && !oneShot.isCancelled)
        #expect(!oneShot.isCancelled)
        #expect(fired.load(ordering: .relaxed) == 1)
    }

    @Test("a timer cancelled from inside an earlier timer of the same iteration does not fire")
    func cancelWithinIteration() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        let second = Lock<ScheduledTimer?>(nil)
        try driver.loop.schedule(after: .milliseconds(1)) {
            trace.record("first")
            second.withLock { $0?.cancel() }
        }
        second.withLock { $0 = try! driver.loop.schedule(after: .milliseconds(1)) { trace.record("second") } }
        try driver.advance(by: .milliseconds(1))
        #expect(trace.labels == ["first"])
    }

    @Test("a timer scheduled from another thread keeps its deadline from the call")
    func scheduleFromAnotherThread() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        let loop = driver.loop
        onAnotherThread { _ = try! loop.schedule(after: .milliseconds(5)) { trace.record("remote") } }
        try driver.step()  // the timer joins the heap
        try driver.advance(by: .milliseconds(4))
        #expect(trace.labels.isEmpty)
        try driver.advance(by: .milliseconds(1))
        #expect(trace.labels == ["remote"])
    }

    @Test("a zero or negative repeat interval is refused")
    func badInterval() throws {
        let driver = try LoopDriver()
        #expect(throws: EventLoopError.self) { try driver.loop.schedule(after: .zero, repeating: .zero) {} }
    }

    @Test("on the system clock a blocked loop wakes for its next timer")
    func realTimeWakeUp() throws {
        let loop = try EventLoop()
        let clock = SystemLoopClock()
        let start = clock.nanoseconds()
        let firedAt = Atomic<UInt64>(0)
        try loop.schedule(after: .milliseconds(20)) {
            firedAt.store(clock.nanoseconds(), ordering: .relaxed)
            loop.stop()
        }
        try loop.run()
        #expect(firedAt.load(ordering: .relaxed) - start >= 20_000_000)
    }

    @Test("the kernel timer is armed for exactly the time left, not on libevent's coarse 4 ms clock")
    func kernelTimerIsArmedToTheNanosecond() throws {
        // Issue 11: on libevent's cached coarse clock a 1 ms repeating timer ticked every 4 ms. The loop's
        // timer is a timerfd armed to the nanosecond: what is armed never exceeds the time asked for.
        let loop = try EventLoop()
        try loop.schedule(after: .microseconds(1_500)) {}
        loop.armTimerEvent()  // what the loop does before it blocks
        let remaining = loop.events.timerRemainingNanoseconds ?? 0  // 0: already expired, also within
        #expect(remaining <= 1_500_000)
        #expect(loop.state.value.armedTimerDeadline != nil)
    }

    @Test("a fired kernel timer is reset within its iteration, so the next blocking poll waits", arguments: [false, true])
    func firedKernelTimerIsReset(rearmed: Bool) throws {
        // The timerfd is not read when it fires: the due timers run first, then it is set for the next
        // deadline (`rearmed`: a timer scheduled by the body) or, with none, read. Left readable, the next
        // blocking poll would return at once, and an idle loop would spin.
        let loop = try EventLoop()
        let fired = Atomic<Int>(0)
        try loop.schedule(after: .milliseconds(1)) {
            fired.add(1, ordering: .relaxed)
            if rearmed { _ = try? loop.schedule(after: .milliseconds(30)) { fired.add(1, ordering: .relaxed) } }
        }
        while fired.load(ordering: .relaxed) == 0 { try loop.runOnce(blocking: true) }
        let stillFired = loop.state.value.timerEventFired
        #expect(!stillFired)
        #expect(loop.events.timerRemainingNanoseconds != nil || !rearmed)
        if !rearmed { try loop.schedule(after: .milliseconds(30)) { fired.add(1, ordering: .relaxed) } }
        let before = loop.iteration
        try loop.runOnce(blocking: true)  // waits for the 30 ms timer, and only for it
        #expect(fired.load(ordering: .relaxed) == 2)
        #expect(loop.iteration == before + 1)
    }

    @Test("a repeating timer's late tick fires late instead of being dropped")
    func lateTickFiresLate() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        try driver.loop.schedule(after: .milliseconds(10), repeating: .milliseconds(10)) {
            trace.record("tick@\(driver.clock.nanoseconds() / 1_000_000)")
        }
        // The loop wakes 5 ms late for the first tick: the second is still due at 20, on the period's grid.
        driver.clock.advance(to: driver.clock.nanoseconds() + 15_000_000)
        try driver.step()
        try driver.advance(by: .milliseconds(5))
        #expect(trace.labels == ["tick@15", "tick@20"])
    }

    @Test("a repeating timer that is late by a period or more fires the overdue tick once, then keeps to its grid")
    func overdueTicksAreCoalesced() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        try driver.loop.schedule(after: .milliseconds(10), repeating: .milliseconds(10)) {
            trace.record("tick@\(driver.clock.nanoseconds() / 1_000_000)")
        }
        // The loop stalls until 45 ms: the tick due at 10 fires, then one overdue tick (for 40), then 50.
        driver.clock.advance(to: driver.clock.nanoseconds() + 45_000_000)
        try driver.step()
        try driver.step()
        try driver.advance(by: .milliseconds(5))
        #expect(trace.labels == ["tick@45", "tick@45", "tick@50"])
    }
}
