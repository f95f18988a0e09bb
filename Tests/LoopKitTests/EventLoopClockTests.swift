import LoopKit
import LoopKitTesting
import Synchronization
import Testing

/// `loop.clock`: the loop's time as a Swift `Clock`, whose sleeps end with the loop's own timers.
@Suite("Event loop clock")
struct EventLoopClockTests {
    /// What a sleeping task saw when its sleep ended: the loop's time and iteration, or the error.
    final class Outcome: Sendable {
        private let value = Mutex<String?>(nil)
        func set(_ text: String) { value.withLock { $0 = text } }
        var text: String? { value.withLock { $0 } }
    }

    /// Starts a task on `loop` that sleeps `duration` on the loop's clock and records how it ended.
    @discardableResult
    static func sleeper(on loop: EventLoop, for duration: Duration, into outcome: Outcome) -> Task<Void, Never> {
        Task(executorPreference: loop) {
            do {
                try await Task.sleep(for: duration, clock: loop.clock)
                outcome.set("woke at \(loop.clock.now.nanoseconds) ns in iteration \(loop.iteration), on the loop \(loop.isCurrent)")
            } catch {
                outcome.set("\(type(of: error))")
            }
        }
    }

    @Test("Task.sleep on the loop's clock ends when virtual time reaches its deadline, with no real wait")
    func sleepEndsOnVirtualTime() throws {
        let driver = try LoopDriver()
        let outcome = Outcome()
        let start = driver.loop.clock.now.nanoseconds
        Self.sleeper(on: driver.loop, for: .seconds(5), into: outcome)
        try driver.runUntilIdle()  // the task starts and sleeps
        try driver.advance(by: .seconds(5) - .nanoseconds(1))
        #expect(outcome.text == nil)
        let firing = driver.loop.iteration + 1
        try driver.advance(by: .nanoseconds(1))
        // The timer fires in phase 2 and resumes the task, which runs in that iteration's drain.
        #expect(outcome.text == "woke at \(start + 5_000_000_000) ns in iteration \(firing), on the loop true")
    }

    /// Issue 43, item 6: the article said a plain sleep measured real time on a virtual-time loop; it never
    /// did, and for a test author the loop's time is the right one (a handler's retry delay takes no real
    /// time, and ends exactly when the test advances past it).
    @Test("A plain Task.sleep (no clock) on a driver's loop ends on virtual time too, not before its deadline")
    func plainSleepEndsOnVirtualTime() throws {
        let driver = try LoopDriver()
        let outcome = Outcome()
        let loop = driver.loop
        let started = ContinuousClock.now
        Task(executorPreference: loop) {
            do {
                try await Task.sleep(for: .milliseconds(500))  // ContinuousClock: the loop times it
                outcome.set("woke in iteration \(loop.iteration), on the loop \(loop.isCurrent)")
            } catch {
                outcome.set("\(type(of: error))")
            }
        }
        try driver.runUntilIdle()
        try driver.advance(by: .milliseconds(499))
        #expect(outcome.text == nil)
        let firing = loop.iteration + 1
        try driver.advance(by: .milliseconds(1))
        #expect(outcome.text == "woke in iteration \(firing), on the loop true")
        #expect(started.duration(to: .now) < .milliseconds(500))  // it did not wait for real time
    }

    @Test("A sleep off the loop (a detached task) measures real time while the driver's time stands still")
    func sleepOffTheLoopIsRealTime() async throws {
        let driver = try LoopDriver()
        let before = driver.loop.clock.now
        let started = ContinuousClock.now
        try await Task.detached { try await Task.sleep(for: .milliseconds(50)) }.value
        #expect(started.duration(to: .now) >= .milliseconds(50))
        #expect(driver.loop.clock.now == before)  // nothing advanced the loop's time
    }

    @Test("Cancelling a sleeping task ends its sleep at once with CancellationError")
    func cancellationEndsTheSleep() throws {
        let driver = try LoopDriver()
        let outcome = Outcome()
        let task = Self.sleeper(on: driver.loop, for: .seconds(60), into: outcome)
        try driver.runUntilIdle()
        task.cancel()
        try driver.runUntilIdle()
        #expect(outcome.text == "CancellationError")
        try driver.advance(by: .seconds(60))  // the timer was cancelled: nothing ends twice
        #expect(outcome.text == "CancellationError")
    }

    @Test("A sleep on a loop that shuts down ends with EventLoopError.shutDown, never hangs")
    func shutdownEndsTheSleep() async throws {
        let group = try LoopGroup(threads: 1)
        let loop = group.loops[0]
        let outcome = Outcome()
        let started = Self.sleeper(on: loop, for: .seconds(3_600), into: outcome)
        try await loop.perform {}  // the task has started and is sleeping, or will find the loop closed
        group.shutdown()
        await started.value
        #expect(outcome.text == "EventLoopError")
    }

    @Test("A sleep whose deadline has passed ends in the loop's next iteration")
    func pastDeadlineEndsInTheNextIteration() throws {
        let driver = try LoopDriver()
        let outcome = Outcome()
        let loop = driver.loop
        Task(executorPreference: loop) {
            do {
                try await loop.clock.sleep(until: loop.clock.now.advanced(by: .seconds(-1)))
                outcome.set("woke")
            } catch {
                outcome.set("\(error)")
            }
        }
        try driver.step()  // the task starts, sleeps; its timer is already due
        #expect(outcome.text == nil)
        try driver.step()
        #expect(outcome.text == "woke")
    }

    @Test("Instants advance and measure durations in both directions, clamped to the time line")
    func instantArithmetic() {
        let instant = EventLoopClock.Instant(nanoseconds: 1_000)
        #expect(instant.advanced(by: .nanoseconds(500)).nanoseconds == 1_500)
        #expect(instant.advanced(by: .nanoseconds(-400)).nanoseconds == 600)
        #expect(instant.advanced(by: .seconds(-1)).nanoseconds == 0)
        #expect(instant.duration(to: EventLoopClock.Instant(nanoseconds: 250)) == .nanoseconds(-750))
        #expect(EventLoopClock.Instant(nanoseconds: .max - 1).advanced(by: .seconds(1)).nanoseconds == .max)
    }
}
