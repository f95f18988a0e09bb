import LoopKit
import Synchronization
import Testing

/// A loop is a scheduling executor: `Task.sleep` in a task that runs on the loop is woken by one of the
/// loop's own timers, not by a Dispatch timer on another thread.
@Suite("Scheduling executor")
struct SchedulingExecutorTests {
    @Test("Task.sleep in a task on a loop ends with a timer of that loop, and the task goes on in that timer's iteration")
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
        // Ten sleeps in a row: a wake-up that went through another thread (Swift's sleep job hopping to the
        // global executor before it resumes the task) would land in a later iteration now and then.
        let resumed = try await Task(executorPreference: loop) { () throws -> [(onLoop: Bool, iteration: UInt64)] in
            var resumed: [(onLoop: Bool, iteration: UInt64)] = []
            for _ in 0..<10 {
                try await Task.sleep(for: .milliseconds(1))
                resumed.append((loop.isCurrent, loop.iteration))
            }
            return resumed
        }.value
        #expect(resumed.allSatisfy { $0.onLoop })
        // Nothing else on this loop has a timer: each sleep's task goes on in the drain of the iteration whose
        // timer woke it (the sleep job runs in the timer callback and queues the task on this thread, R2).
        let fired = timerIterations.withLock { $0 }
        #expect(resumed.allSatisfy { fired.contains($0.iteration) }, "resumed in \(resumed.map(\.iteration)), timers fired in \(fired)")
    }

    @Test("A task sleeping on a loop that shuts down is not lost: it goes on, in the loop's final drain or on Swift's global executor",
          .timeLimit(.minutes(1)))
    func sleepOnALoopThatShutsDownIsNotLost() async throws {
        let group = try LoopGroup(threads: 1)
        let loop = group.loops[0]
        let task = Task(executorPreference: loop) { () -> Bool in
            try? await Task.sleep(for: .seconds(2))
            return true
        }
        try await loop.perform {}  // the task has started and sleeps on the loop's timer
        group.shutdown()
        // The loop drops its timer and hands the sleep to Swift's global executor, which ends it (at once,
        // or when what is left of it has passed). Where the task goes on is a race with the loop's final
        // drain, which still takes Swift jobs: either is right; losing the task is not.
        #expect(await task.value)
    }
}
