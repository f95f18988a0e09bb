@_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency
import LoopKit

/// The main actor's executor on ``LoopKit/EventLoop/main``: `@MainActor` jobs are queued work of the main
/// loop, a `@MainActor` task's `Task.sleep` ends with a timer of the main loop, and running the executor
/// runs the loop.
///
/// Safe from any thread; ``run()`` on the main thread only.
final class MainLoopExecutor: MainExecutor, SchedulingExecutor {
    let loop: EventLoop

    init(_ loop: EventLoop) { self.loop = loop }

    /// Queues a `@MainActor` job in the main loop's next drain, isolated to the main actor.
    func enqueue(_ job: consuming ExecutorJob) {
        loop.enqueue(UnownedJob(job), isolatedTo: asUnownedSerialExecutor())
    }

    /// Queues a `@MainActor` job once `delay` has passed on the main loop's time, from its timer.
    func enqueue<C: Clock>(_ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C) {
        let job = UnownedJob(job)
        let isolation = asUnownedSerialExecutor()
        do {
            try loop.schedule(after: EventLoop.loopDuration(delay, of: C.self), whenDropped: {
                fatalError("LoopKit: the main loop shut down while a @MainActor task slept on it")
            }) { [loop] in
                // Run now, in the timer's callback: the job is Swift's small sleep task, which resumes the
                // sleeping one; queued from here, that one goes on in this iteration's drain (R2).
                job.runSynchronously(isolatedTo: isolation, taskExecutor: loop.asUnownedTaskExecutor())
            }
        } catch {
            fatalError("LoopKit: a @MainActor task slept after the main loop shut down")
        }
    }

    /// Runs the main loop until ``stop()`` (Swift calls this when an `async` main first suspends).
    func run() throws { try loop.run() }

    /// Makes ``run()`` return after the main loop's current iteration.
    func stop() { loop.stop() }

    var isMainExecutor: Bool { true }

    func checkIsolated() { loop.checkIsolated() }

    func isIsolatingCurrentContext() -> Bool? { loop.isCurrent }
}
