import Synchronization

extension EventLoop: TaskExecutor {
    /// Runs a Swift concurrency job on the loop, in its next drain, in FIFO order with other work:
    /// a loop is a `TaskExecutor` (`Task(executorPreference: loop) { … }`), and actors pin themselves to
    /// it through ``unownedExecutor``.
    ///
    /// A job is never refused nor dropped: after ``shutdown()`` jobs are still taken until the loop's
    /// final drain has run (so a task that the shutdown itself resumes — a connection ending, a waiter
    /// told — runs to its end or its next suspension on the loop). On a loop that has finished shutting
    /// down, a task that merely prefers it goes on on Swift's global concurrent executor (a preference,
    /// not a requirement); an actor pinned to such a loop cannot, and stops the process with a message.
    ///
    /// Safe from any thread.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        do {
            try append(Job { [self] in job.runSynchronously(on: self.asUnownedTaskExecutor()) }, isExecutorJob: true)
        } catch {
            globalConcurrentExecutor.enqueue(ExecutorJob(job))  // the loop is gone; the task goes on
        }
    }

    /// Queues a Swift concurrency job that runs with `taskExecutor` as its task executor (the executor a
    /// group of loops presents to Swift as its default one), in the next drain. Never refused: after the
    /// loop has finished shutting down the job goes on on Swift's global executor.
    ///
    /// Safe from any thread.
    package func enqueue(_ job: UnownedJob, runningOn taskExecutor: UnownedTaskExecutor) {
        do {
            try append(Job { job.runSynchronously(on: taskExecutor) }, isExecutorJob: true)
        } catch {
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
        }
    }

    /// Queues a Swift concurrency job isolated to `executor`, a serial executor whose jobs run on this
    /// loop's thread (the main actor's, when `LoopKitExecutors` puts it on the main loop), in the next drain.
    /// The job runs on `executor` alone, with no task executor: a `@MainActor` task has no executor
    /// preference, and given the loop as one, Swift's first `swift_task_switch` of a new task saw a
    /// different context and queued the task again, one iteration late (issue 43, item 5).
    ///
    /// Safe from any thread. Stops the process when the loop has finished shutting down: an isolated job
    /// cannot run anywhere else.
    package func enqueue(_ job: UnownedJob, isolatedTo executor: UnownedSerialExecutor) {
        do {
            try append(Job { job.runSynchronously(on: executor) }, isExecutorJob: true)
        } catch {
            fatalError("LoopKit: a serial executor on an EventLoop that has finished shutting down was given work")
        }
    }

    /// Queues a job an actor pinned to the loop enqueued on its serial executor (``LoopIsolation``).
    func enqueueIsolated(_ job: UnownedJob) {
        do {
            try append(Job { [self] in
                job.runSynchronously(isolatedTo: isolation.asUnownedSerialExecutor(), taskExecutor: self.asUnownedTaskExecutor())
            }, isExecutorJob: true)
        } catch {
            fatalError("LoopKit: an actor pinned to an EventLoop that has finished shutting down was given work")
        }
    }

    /// The executor an actor returns from its own `unownedExecutor` to run on this loop.
    ///
    /// ```swift
    /// actor Renderer {
    ///     let loop: EventLoop
    ///     nonisolated var unownedExecutor: UnownedSerialExecutor { loop.unownedExecutor }
    /// }
    /// ```
    /// Safe from any thread.
    public var unownedExecutor: UnownedSerialExecutor { isolation.asUnownedSerialExecutor() }

    /// Stops the process unless called on the loop's thread; what `assumeIsolated` checks for an actor
    /// pinned to the loop.
    ///
    /// Safe from any thread.
    public func checkIsolated() {
        precondition(isCurrent, "LoopKit: expected to run on the EventLoop's thread")
    }
}

/// A loop's serial executor: actors pinned to the loop (``EventLoop/unownedExecutor``) run their jobs
/// through it, on the loop's thread, in the loop's queue.
///
/// It is a separate object from the loop, which is the *task* executor, on purpose: a task that only
/// prefers the loop then runs without claiming a serial executor's isolation, so a call from it into a
/// nonisolated async function (`connection.inbound`, most library code) stays on the loop's thread
/// without a hop. Were the loop its own serial executor, every such call would leave that isolation and
/// come back through the queue, an iteration later.
///
/// Safe from any thread.
final class LoopIsolation: SerialExecutor {
    /// The loop's address, unretained (the loop owns this object); set once, in the loop's init.
    private let loopAddress = Atomic<UInt>(0)

    init() {}

    /// Binds the executor to its loop. Called once, from the loop's init.
    func bind(to loop: EventLoop) {
        loopAddress.store(UInt(bitPattern: Unmanaged.passUnretained(loop).toOpaque()), ordering: .releasing)
    }

    private var loop: EventLoop {
        let address = UnsafeRawPointer(bitPattern: loopAddress.load(ordering: .acquiring))!
        return Unmanaged<EventLoop>.fromOpaque(address).takeUnretainedValue()
    }

    func enqueue(_ job: consuming ExecutorJob) { loop.enqueueIsolated(UnownedJob(job)) }

    func checkIsolated() { loop.checkIsolated() }

    func isIsolatingCurrentContext() -> Bool? { loop.isCurrent }
}

extension EventLoop {
    /// Runs `work` on the loop and returns its result to the awaiting task.
    ///
    /// When the caller already runs on the loop's thread, `work` runs inline; otherwise it is queued
    /// (FIFO with other work) and the task resumes once it has run.
    ///
    /// - Returns: What `work` returned.
    /// - Throws: What `work` threw; ``EventLoopError/shutDown`` when the loop refuses new work;
    ///   ``EventLoopError/cancelled`` when it shut down before running `work`.
    ///
    /// Safe from any thread or task.
    public func perform<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
        if isCurrent {
            guard queue.isAccepting else { throw EventLoopError.shutDown }
            return try work()
        }
        return try await withCheckedThrowingContinuation { continuation in
            do {
                try appendCancellable({ continuation.resume(with: Result { try work() }) },
                                      onCancel: { continuation.resume(throwing: EventLoopError.cancelled) })
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }
}
