extension EventLoop {
    /// Queues `work` to run in the loop's next drain (phase 3), never inside the caller.
    ///
    /// Work runs in the order it was queued (R1). Queued from an I/O or timer callback of iteration N
    /// (phase 2), it runs in the drain of N, after that callback returned (R2); queued from work the
    /// drain of N runs, it runs in N + 1, never in N (R2, R3). From another thread the call wakes a
    /// waiting loop, at most once per iteration however many jobs arrive (R7).
    ///
    /// - Throws: ``EventLoopError/shutDown`` once ``shutdown()`` has been called (R10); `work` is not kept.
    ///
    /// Safe from any thread.
    @inline(__always)
    public func enqueue(_ work: consuming @escaping @Sendable () -> Void) throws(EventLoopError) {
        try append(Job(work))
    }

    /// Runs `work` now when called on the loop's thread; from any other thread, queues it (R5).
    ///
    /// On the loop's thread it does not wait for the next iteration.
    ///
    /// - Throws: ``EventLoopError/shutDown`` once ``shutdown()`` has been called.
    ///
    /// Safe from any thread.
    public func invoke(_ work: @escaping @Sendable () -> Void) throws(EventLoopError) {
        if owner.isCurrent {
            guard queue.isAccepting else { throw .shutDown }
            work()
        } else {
            try append(Job(work))
        }
    }

    /// Runs `work` on the loop and returns its result, waiting for it when called from another thread (R6).
    ///
    /// On the loop's thread `work` runs inline, so this never deadlocks there. From another thread the
    /// caller blocks until the loop has run `work` (queued in FIFO order with other work), then gets its
    /// value or its error. If the loop shuts down without running it, the caller gets
    /// ``EventLoopError/cancelled`` instead of waiting forever.
    ///
    /// - Returns: What `work` returned.
    /// - Throws: What `work` threw; ``EventLoopError/shutDown`` when the loop refuses new work;
    ///   ``EventLoopError/cancelled`` when it shut down before running `work`.
    ///
    /// Safe from any thread. Do not call it from another loop's thread while that loop must stay responsive.
    public func invokeAndWait<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) throws -> Value {
        if owner.isCurrent {
            guard queue.isAccepting else { throw EventLoopError.shutDown }
            return try work()
        }
        let rendezvous = Rendezvous<Result<Value, any Error>>()
        try appendCancellable({ rendezvous.fulfil(Result { try work() }) },
                              onCancel: { rendezvous.fulfil(.failure(EventLoopError.cancelled)) })
        return try rendezvous.wait().get()
    }

    /// Appends a job to the next-iteration queue and wakes the loop if the queue says it needs waking.
    @inline(__always)
    func append(_ job: consuming Job, isExecutorJob: Bool = false) throws(EventLoopError) {
        if owner.isCurrent {
            if try queue.pushOnLoopThread(job, isExecutorJob: isExecutorJob), isAttached { requestDrain(fromLoopThread: true) }
        } else if try queue.pushFromAnotherThread(job, isExecutorJob: isExecutorJob) {
            requestDrain(fromLoopThread: false)
        }
    }

    /// Appends a job whose waiter must hear about it if the loop is freed before the job runs.
    func appendCancellable(_ job: @escaping @Sendable () -> Void, onCancel: @escaping @Sendable () -> Void) throws(EventLoopError) {
        let key = cancellations.withLock { $0.register(onCancel) }
        do {
            // Weak: a queued job must not keep its own loop alive (the loop's teardown cancels it).
            try append(Job { [weak self] in
                self?.cancellations.withLock { $0.remove(key) }
                job()
            })
        } catch {
            cancellations.withLock { $0.remove(key) }
            throw error
        }
    }

    /// Makes the loop poll again soon. Cross-thread: write to its wake-up eventfd (waking a waiting poll,
    /// outside every lock) unless the loop is running and will see the job before it waits; an attached
    /// loop's poll is its host's, so its eventfd is always written. On the loop thread of an attached
    /// loop: add the tick with a zero timeout so it runs after the host's next poll (not in the pass
    /// that is running, which would starve the host's I/O: R4).
    func requestDrain(fromLoopThread: Bool) {
        if fromLoopThread {
            events.tick.add(timeoutNanoseconds: 0)
        } else if isAttached || queue.loopMayBeAsleep {
            wakeUps.add(1, ordering: .relaxed)
            events.wake()
        }
    }
}
