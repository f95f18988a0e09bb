import LoopKit
import LoopKitMetrics
import LoopKitTesting
import MetricsTestKit
import Testing

/// Loop metrics recorded by a test `MetricsFactory`, on virtual time: exact values.
@Suite("Loop metrics")
struct LoopMetricsTests {
    @Test func eachIterationIsRecordedUnderTheLoopsName() throws {
        let metrics = TestMetrics()
        let driver = try LoopDriver()
        try LoopMetrics.record(driver.loop, name: "main", factory: metrics)
        let clock = driver.clock
        try driver.loop.enqueue { clock.advance(by: .milliseconds(3)) }
        try driver.loop.enqueue { try? driver.loop.enqueue {} }
        try driver.step()
        let dimensions = [("loop", "main")]
        #expect(try metrics.expectTimer(LoopMetrics.Name.iterationDuration, dimensions).lastValue == 3_000_000)
        #expect(try metrics.expectTimer(LoopMetrics.Name.pollWait, dimensions).lastValue == 0)
        #expect(try metrics.expectRecorder(LoopMetrics.Name.drainSize, dimensions).lastValue == 2)
        #expect(try metrics.expectGauge(LoopMetrics.Name.queueDepth, dimensions).lastValue == 1)
        #expect(try metrics.expectCounter(LoopMetrics.Name.iterations, dimensions).totalValue == 1)
        try driver.step(2)
        #expect(try metrics.expectCounter(LoopMetrics.Name.iterations, dimensions).totalValue == 3)
        #expect(try metrics.expectGauge(LoopMetrics.Name.queueDepth, dimensions).lastValue == 0)
    }

    @Test func timerLatenessAndBudgetOverrunsAreRecorded() throws {
        let metrics = TestMetrics()
        let driver = try LoopDriver()
        try LoopMetrics.record(driver.loop, name: "jobs", factory: metrics)
        try driver.loop.schedule(after: .milliseconds(5)) {}
        driver.clock.advance(by: .milliseconds(7))
        try driver.step()
        #expect(try metrics.expectTimer(LoopMetrics.Name.timerLateness, [("loop", "jobs")]).lastValue == 2_000_000)
        let clock = driver.clock
        try driver.loop.process(0..<2, budget: .time(.milliseconds(1)), each: { _ in clock.advance(by: .milliseconds(2)) },
                                completion: { _ in })
        try driver.runUntilIdle()
        #expect(try metrics.expectCounter(LoopMetrics.Name.budgetOverruns, [("loop", "jobs")]).totalValue >= 1)
    }

    @Test func crossThreadWakeUpsAreCounted() throws {
        let metrics = TestMetrics()
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        try LoopMetrics.record(loop, name: "worker", factory: metrics)
        for _ in 0..<3 { try loop.invokeAndWait {} }
        try loop.invokeAndWait {}  // the iteration that ran the last job has reported by the next one
        #expect(try metrics.expectCounter(LoopMetrics.Name.wakeUps, [("loop", "worker")]).totalValue >= 1)
    }

    @Test func stoppingRemovesTheObserver() throws {
        let metrics = TestMetrics()
        let driver = try LoopDriver()
        try LoopMetrics.record(driver.loop, name: "main", factory: metrics)
        try driver.step()
        try LoopMetrics.stopRecording(driver.loop)
        try driver.step(3)
        #expect(try metrics.expectCounter(LoopMetrics.Name.iterations, [("loop", "main")]).totalValue == 1)
    }
}
