import Foundation
import LoopKit
import LoopKitTesting
import Synchronization
import Testing

/// The iteration observer on virtual time: each callback moves the driver's clock by a known amount, so
/// each phase's figure is exact and the phases add up to the iteration's wall time with no tolerance.
@Suite("Iteration observer")
struct IterationObserverTests {
    /// Collects the reports a loop hands its observer.
    final class Reports: Sendable {
        private let storage = Mutex<[IterationReport]>([])
        func append(_ report: IterationReport) { storage.withLock { $0.append(report) } }
        var all: [IterationReport] { storage.withLock { $0 } }
        var last: IterationReport? { all.last }
    }

    func observed() throws -> (LoopDriver, Reports) {
        let driver = try LoopDriver()
        let reports = Reports()
        try driver.loop.setIterationObserver { reports.append($0) }
        return (driver, reports)
    }

    @Test func eachPhaseIsMeasuredAndThePhasesAddUpToTheIteration() throws {
        let (driver, reports) = try observed()
        let clock = driver.clock
        let pipe = TestPipe()
        defer { pipe.close() }
        let watch = try driver.loop.watch(pipe.readEnd, for: .readable) { _ in
            pipe.drain()
            clock.advance(by: .milliseconds(1))   // an I/O callback that takes 1 ms
        }
        defer { watch.cancel() }
        try driver.loop.schedule(after: .zero) { clock.advance(by: .milliseconds(2)) }   // a timer: 2 ms
        try driver.loop.enqueue { clock.advance(by: .milliseconds(3)) }                  // a job: 3 ms
        try driver.loop.enqueue { clock.advance(by: .milliseconds(4)) }                  // another: 4 ms
        pipe.makeReadable()
        try driver.step()
        let report = try #require(reports.last)
        #expect(report.iteration == driver.loop.iteration)
        #expect(report.pollWait == .zero)  // virtual time does not pass while the poll waits
        #expect(report.ioCallbacks == .milliseconds(1))
        #expect(report.ioCallbackCount == 1)
        #expect(report.timers == .milliseconds(2))
        #expect(report.timersFired == 1)
        #expect(report.drain == .milliseconds(7))
        #expect(report.drainedJobs == 2)
        #expect(report.total == .milliseconds(10))
        #expect(report.pollWait + report.ioCallbacks + report.timers + report.drain == report.total)
    }

    @Test func anIterationReportsTheWorkLeftForTheNext() throws {
        let (driver, reports) = try observed()
        try driver.loop.enqueue {
            try? driver.loop.enqueue {}
            try? driver.loop.enqueue {}
        }
        try driver.step()
        #expect(reports.last?.drainedJobs == 1)
        #expect(reports.last?.queueDepth == 2)
        try driver.step()
        #expect(reports.last?.drainedJobs == 2)
        #expect(reports.last?.queueDepth == 0)
    }

    @Test func theLatestTimerSetsTheWorstLateness() throws {
        let (driver, reports) = try observed()
        try driver.loop.schedule(after: .milliseconds(5)) {}
        try driver.loop.schedule(after: .milliseconds(7)) {}
        driver.clock.advance(by: .milliseconds(9))  // both due; the first 4 ms late, the second 2 ms
        try driver.step()
        #expect(reports.last?.timersFired == 2)
        #expect(reports.last?.worstTimerLateness == .milliseconds(4))
        try driver.step()
        #expect(reports.last?.timersFired == 0)
        #expect(reports.last?.worstTimerLateness == .zero)
    }

    @Test func aChunkPastItsBudgetIsReportedAsAnOverrun() throws {
        let (driver, reports) = try observed()
        let clock = driver.clock
        // Items of 3 ms against a 1 ms budget: the first stride of one item already overruns it.
        try driver.loop.process(0..<3, budget: .time(.milliseconds(1)), each: { _ in clock.advance(by: .milliseconds(3)) },
                                completion: { _ in })
        try driver.runUntilIdle()
        #expect(reports.all.contains { $0.budgetOverrun })
        // Items well within the budget never overrun it.
        let quiet = try observed()
        let quietClock = quiet.0.clock
        try quiet.0.loop.process(0..<100, budget: .time(.milliseconds(10)), each: { _ in quietClock.advance(by: .microseconds(10)) },
                                 completion: { _ in })
        try quiet.0.runUntilIdle()
        #expect(!quiet.1.all.isEmpty)
        #expect(!quiet.1.all.contains { $0.budgetOverrun })
    }

    @Test func everyIterationIsReportedUntilTheObserverIsRemoved() throws {
        let (driver, reports) = try observed()
        try driver.step(3)
        #expect(reports.all.map(\.iteration) == [1, 2, 3])
        try driver.loop.setIterationObserver(nil)
        try driver.step(2)
        #expect(reports.all.count == 3)
    }

    @Test func anObserverSetFromAnotherThreadStartsAfterTheDrainThatInstallsIt() throws {
        let driver = try LoopDriver()
        let reports = Reports()
        let installed = Mutex<Bool>(false)
        let thread = Thread {
            do { try driver.loop.setIterationObserver { reports.append($0) } } catch {}
            installed.withLock { $0 = true }
        }
        thread.start()
        while !installed.withLock({ $0 }) { sched_yield() }
        try driver.step()  // its drain installs the observer: this iteration is not reported
        #expect(reports.all.isEmpty)
        try driver.step()
        #expect(reports.all.count == 1)
    }

    @Test func aReportDescribesItself() {
        let report = IterationReport(iteration: 42, pollWait: .milliseconds(1), drain: .microseconds(100), drainedJobs: 5)
        #expect(report.total == .microseconds(1100))
        #expect(report.description.hasPrefix("iteration 42: "))
        #expect(report.description.contains("×5"))
    }
}
