extension EventLoop: SerialExecutor, TaskExecutor {
    /// Runs a Swift concurrency job on the loop, in its next iteration, in FIFO order with other work.
    ///
    /// This makes a loop both a `SerialExecutor` (an actor can pin itself to it through
    /// ``unownedExecutor``) and a `TaskExecutor` (`Task(executorPreference: loop) { … }`).
    /// A job cannot be refused, so enqueuing one after ``shutdown()`` is a programmer error and stops
    /// the process with a message.
    ///
    /// Safe from any thread.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        do {
            try append(Job { [self] in
                job.runSynchronously(
                    isolatedTo: self.asUnownedSerialExecutor(), taskExecutor: self.asUnownedTaskExecutor())
            })
        } catch {
            fatalError("LoopKit: a Swift concurrency job was scheduled on an EventLoop that has shut down")
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
    public var unownedExecutor: UnownedSerialExecutor { asUnownedSerialExecutor() }

    /// Stops the process unless called on the loop's thread; used by `assumeIsolated`.
    ///
    /// Safe from any thread.
    public func checkIsolated() {
        precondition(isCurrent, "LoopKit: expected to run on the EventLoop's thread")
    }

    /// Whether the calling code runs on this loop's thread. Safe from any thread.
    public func isIsolatingCurrentContext() -> Bool? { isCurrent }
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
