@_spi(ExperimentalScheduling) import _Concurrency

// The one use of experimental SPI in LoopKit itself: Swift 6.3's `SchedulingExecutor`, through which
// `Task.sleep` hands a sleeping task to the executor it runs on. The conformance must be declared in the
// module that makes the loop an executor (it is part of the loop's executor witness), so it cannot live in
// LoopKitExecutors. A toolchain that changes this SPI needs this file changed; without it, tasks on a loop
// sleep on Dispatch's timers, and `loop.clock` sleeps on the loop's.

/// A loop takes delayed jobs: `Task.sleep` in a task that runs on a loop (its executor preference) is woken
/// by one of the loop's own timers in phase 2, and the task goes on in that iteration's drain (phase 3):
/// never by a Dispatch timer on another thread. (A group installed as Swift's default executor by LoopKitExecutors
/// does the same for the tasks it runs.)
///
/// The loop times the delay on its own time, whatever the sleep's clock: a plain `Task.sleep(for:)`
/// (`ContinuousClock`) on a `LoopDriver`'s loop ends on the driver's virtual time, as a sleep on
/// ``EventLoop/clock`` does (a sleep in a task off the loop measures real time). A job whose loop shuts down
/// first goes on on Swift's global executor, so its task is never lost.
@_spi(ExperimentalScheduling)
extension EventLoop: SchedulingExecutor {
    public func enqueue<C: Clock>(_ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C) {
        let job = UnownedJob(job)
        do {
            try runDelayedJob(job, after: Self.loopDuration(delay, of: C.self),
                              whenDropped: { globalConcurrentExecutor.enqueue(ExecutorJob(job)) })
        } catch {
            globalConcurrentExecutor.enqueue(ExecutorJob(job))  // the loop has shut down
        }
    }
}

extension EventLoop {
    /// Runs a delayed Swift job (`Task.sleep`'s) from one of the loop's timers once `delay` has passed, or
    /// calls `whenDropped` if the loop drops the timer unfired. Safe from any thread.
    ///
    /// The job runs in the timer's callback, where it expects to run: Swift's small sleep task has no
    /// executor preference, so it runs as on the global executor (given a loop as its task executor, or an
    /// actor's isolation, it would first hop to a Dispatch thread, and the sleeping task would come back from
    /// there a loop iteration later). It resumes the sleeping task from the loop's thread, which queues it
    /// in this iteration's drain (R2).
    package func runDelayedJob(_ job: UnownedJob, after delay: Duration,
                               whenDropped: @escaping @Sendable () -> Void) throws(EventLoopError) {
        try schedule(after: delay, whenDropped: whenDropped) {
            job.runSynchronously(on: globalConcurrentExecutor.asUnownedTaskExecutor())
        }
    }
}

extension EventLoop {
    /// `delay` as a `Duration`: every clock of the standard library, and ``LoopKit/EventLoopClock``, measures
    /// in `Duration`.
    package static func loopDuration<C: Clock>(_ delay: C.Duration, of _: C.Type) -> Duration {
        guard let delay = delay as? Duration else {
            fatalError("LoopKit: a loop cannot time a sleep on \(C.self), whose durations are not Swift.Duration")
        }
        return delay
    }
}
