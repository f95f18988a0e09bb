@_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency
import LoopKit

/// The main actor's executor on ``LoopKit/EventLoop/main``: `@MainActor` jobs are queued work of the main
/// loop, delayed jobs given to it end with a timer of the main loop, and running the executor runs the loop.
/// (Swift 6.3 gives it none from `Task.sleep`, which it runs off the main actor, on the default executor.)
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
        do {
            try loop.runDelayedJob(job, after: EventLoop.loopDuration(delay, of: C.self), whenDropped: {
                fatalError("LoopKit: the main loop shut down while a @MainActor task slept on it")
            })
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
