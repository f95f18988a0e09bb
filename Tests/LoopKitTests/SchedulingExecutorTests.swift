import LoopKit
import Synchronization
import Testing

/// A loop is a scheduling executor: `Task.sleep` in a task that runs on the loop is woken by one of the
/// loop's own timers, not by a Dispatch timer on another thread.
@Suite("Scheduling executor")
struct SchedulingExecutorTests {
    @Test("Task.sleep in a task on a loop ends with a timer of that loop, and the task goes on on the loop")
    func sleepEndsWithALoopTimer() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let timerIterations = Mutex<[UInt64]>([])
        try await loop.perform {
            try loop.setIterationObserver { report in
                if report.timersFired > 0 { timerIterations.withLock { $0.append(report.iteration) } }
            }
        }
        let (onLoop, iteration) = try await Task(executorPreference: loop) { () throws -> (Bool, UInt64) in
            try await Task.sleep(for: .milliseconds(5))
            return (loop.isCurrent, loop.iteration)
        }.value
        #expect(onLoop)
        // Nothing else on this loop has a timer: the task goes on in the iteration whose timer woke it or the
        // next (Swift's sleep job runs in the timer callback; Swift may switch executors once on the way).
        let fired = try #require(timerIterations.withLock { $0 }.last)
        #expect(iteration == fired || iteration == fired + 1)
    }

    @Test("A task sleeping on a loop that shuts down goes on, on Swift's global executor", .timeLimit(.minutes(1)))
    func sleepOnALoopThatShutsDownIsNotLost() async throws {
        let group = try LoopGroup(threads: 1)
        let loop = group.loops[0]
        let task = Task(executorPreference: loop) { () -> Bool in
            try? await Task.sleep(for: .milliseconds(200))
            return loop.isCurrent
        }
        try await loop.perform {}  // the task has started and sleeps on the loop's timer
        group.shutdown()
        #expect(await task.value == false)  // woken when the loop dropped its timer, and finished off the loop
    }
}
