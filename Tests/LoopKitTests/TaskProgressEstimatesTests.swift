@testable import LoopKit
import Testing
import LoopKitTesting

@Suite struct TaskProgressEstimatesTests {
    @Test func throughputIsUnitsPerSecondBetweenSamples() {
        let clock = VirtualClock()
        let progress = TaskProgress.discrete(totalUnitCount: 1_000, clock: clock)
        #expect(progress.throughput == nil)  // the first read is the baseline
        progress.increment(by: 100)
        clock.advance(by: .seconds(1))
        #expect(progress.throughput == 100)
        #expect(progress.estimatedTimeRemaining == .seconds(9))
    }

    @Test func throughputIsAnExponentialMovingAverage() {
        let clock = VirtualClock()
        let progress = TaskProgress.discrete(totalUnitCount: 1_000, clock: clock)
        _ = progress.snapshot()
        progress.increment(by: 100)
        clock.advance(by: .seconds(1))
        _ = progress.snapshot()
        progress.increment(by: 300)
        clock.advance(by: .seconds(1))
        let snapshot = progress.snapshot()
        #expect(abs(snapshot.throughput! - 160) < 1e-9)  // 0.3 × 300 + 0.7 × 100
        #expect(snapshot.estimatedTimeRemaining == .milliseconds(3_750))  // 600 units at 160/s
        #expect(snapshot.description == "40% — 400 of 1,000 items, about 4 s left")
    }

    @Test func samplesCloserThanAHundredMillisecondsAreSkipped() {
        let clock = VirtualClock()
        let progress = TaskProgress.discrete(totalUnitCount: 1_000, clock: clock)
        _ = progress.snapshot()
        progress.increment(by: 10)
        clock.advance(by: .milliseconds(50))
        #expect(progress.throughput == nil)
        clock.advance(by: .milliseconds(50))
        #expect(progress.throughput == 100)
    }

    @Test func childrenPartialWorkCountsInThroughput() {
        let clock = VirtualClock()
        let parent = TaskProgress.discrete(totalUnitCount: 10, clock: clock)
        let child = TaskProgress.discrete(totalUnitCount: 100)
        parent.addChild(child, withPendingUnitCount: 10)
        _ = parent.snapshot()
        child.increment(by: 20)
        clock.advance(by: .seconds(2))
        #expect(parent.throughput == 1)  // 2 parent units in 2 s
        #expect(parent.estimatedTimeRemaining == .seconds(8))
    }

    @Test func noEstimateWhileIndeterminateAndZeroWhenFinished() {
        let clock = VirtualClock()
        let progress = TaskProgress.discrete(totalUnitCount: -1, clock: clock)
        _ = progress.snapshot()
        clock.advance(by: .seconds(1))
        #expect(progress.estimatedTimeRemaining == nil)
        progress.totalUnitCount = 1
        progress.increment()
        #expect(progress.estimatedTimeRemaining == .zero)
    }
}
