import LoopKit
import LoopKitTesting
import Testing

/// The deterministic test support itself.
@Suite("LoopKitTesting")
struct LoopDriverTests {
    @Test("runUntilIdle runs until nothing is queued and stops runaway work with an error")
    func runUntilIdle() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        @Sendable func countdown(_ n: Int) { if n > 0 { try! loop.enqueue { countdown(n - 1) } } }
        try loop.enqueue { countdown(9) }
        #expect(try driver.runUntilIdle() == 10)
        @Sendable func forever() { try? loop.enqueue(forever) }
        try loop.enqueue(forever)
        #expect(throws: EventLoopError.self) { try driver.runUntilIdle(maxIterations: 50) }
    }

    @Test("advance stops at each deadline, so timers see their own time")
    func advanceStopsAtDeadlines() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        for ms in [3, 1, 2] {
            try driver.loop.schedule(after: .milliseconds(ms)) {
                trace.record("\(ms)ms@\(driver.clock.nanoseconds() / 1_000_000)")
            }
        }
        try driver.advance(by: .milliseconds(10))
        #expect(trace.labels == ["1ms@1", "2ms@2", "3ms@3"])
        #expect(driver.clock.nanoseconds() == 10_000_000)
    }

    @Test("the README's ordering-test example passes as written")
    func readmeExample() throws {
        let driver = try LoopDriver()                 // a loop on a VirtualClock, owned by this thread
        let trace = OrderTrace(driver.loop)
        try driver.loop.schedule(after: .milliseconds(5)) { trace.record("timer") }
        try driver.loop.enqueue {
            trace.record("A")
            try! driver.loop.enqueue { trace.record("B") }
        }
        try driver.step()                             // iteration 1
        try driver.step()                             // iteration 2
        try driver.advance(by: .milliseconds(5))      // time moves; due timers fire in order
        #expect(trace.description == "1:A 2:B 3:timer")
    }

    @Test("an order trace stamps each entry with its iteration")
    func traceStamps() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        trace.record("before")
        try driver.loop.enqueue { trace.record("first") }
        try driver.step()
        #expect(trace.description == "0:before 1:first")
        #expect(trace.iteration(of: "first") == 1)
    }
}
