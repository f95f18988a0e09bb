extension EventLoop {
    /// Shuts the loop down: new work is refused from now on, work queued before runs, what lives on the
    /// loop ends (LoopKitNet's listeners and connections), timers and watches are cancelled (R10).
    ///
    /// On the loop's thread outside an iteration, everything happens before the call returns. Inside one
    /// of the loop's callbacks it happens at the end of that iteration. From another thread the call
    /// refuses new work at once and wakes the loop; the loop's thread finishes the shutdown at the end of
    /// its current iteration, or in its next ``run()``/``runOnce(blocking:)`` (so ``run()`` returns). Queued
    /// work is never dropped: it runs, or — only if the loop is freed without ever being driven again — it
    /// is reported cancelled to whoever waits for it. Calling it again does nothing.
    ///
    /// Safe from any thread.
    public func shutdown() {
        let caller: LoopLifecycle.Caller =
            !owner.isCurrent ? .anotherThread
            : state.value.inIteration ? .loopThreadInsideIteration : .loopThreadOutsideIteration
        switch lifecycle.withLock({ $0.shutdownRequested(by: caller) }) {
        case .none:
            return
        case .closeQueue:
            queue.close()
        case .closeQueueAndFinish:
            queue.close()
            finishShutdown()
        case .closeQueueAndWakeLoop:
            queue.close()
            stopRequested.store(true, ordering: .relaxed)
            wakeUps.add(1, ordering: .relaxed)
            events.wake()
        }
    }

    /// The loop thread reached a checkpoint of its lifecycle (see ``LoopLifecycle``): applies what the
    /// lifecycle answers, finishing a requested shutdown there. Loop thread only.
    ///
    /// While the queue accepts work no shutdown has been requested (``shutdown()`` closes the queue after
    /// the lifecycle moved on, and wakes the loop for its next checkpoint), so the common case costs one
    /// atomic load.
    @discardableResult
    func reachCheckpoint(_ checkpoint: LoopLifecycle.Checkpoint) -> LoopLifecycle.CheckpointAction {
        guard !queue.isAccepting else { return .proceed }
        let action = lifecycle.withLock { $0.reached(checkpoint) }
        if action == .finish { finishShutdown() }
        return action
    }

    /// The second half of a shutdown: runs what was queued before it, then cancels timers and watches
    /// (R10). Loop thread only, and only as a lifecycle action.
    private func finishShutdown() {
        // Closed on every path here already; closing again states that nothing can join the final drain.
        queue.close()
        // Jobs of the final drain see themselves inside an iteration: run() from one is refused (R11).
        let wasInIteration = state.value.inIteration
        state.value.inIteration = true
        // New work is refused; only Swift concurrency jobs (tasks resumed) can still join the drain.
        drainUntilEmpty()
        // What lives on the loop ends now, with the work queued before the shutdown done: connections
        // close and tell their waiters, whose tasks run in the drain that follows. Observers run one at a
        // time, each looked up again: one may end (and unregister) what a later one observes, as a server
        // closing its connections does.
        for owner in state.value.shutdownObserverOrder() {
            guard let observer = state.value.shutdownObservers.removeValue(forKey: owner) else { continue }
            CurrentLoop.with(self) { observer.body() }
        }
        repeat { drainUntilEmpty() } while !queue.sealIfEmpty()
        state.value.releaseAll()
        events.stopListening()
        if !isAttached {
            do {
                try CurrentLoop.with(self) { () throws(EventLoopError) in try events.finishDeferredWork() }
            } catch {
                // A failed last poll leaves libevent's deferred frees to the base's own teardown (at
                // the latest when the loop is freed): the sockets close then. Nothing waits on it.
            }
        }
        state.value.inIteration = wasInIteration
        lifecycle.withLock { $0.finished() }
    }

    private func drainUntilEmpty() {
        while queue.hasJobs {
            CurrentLoop.with(self) { _ = drainQueue() }
        }
    }

    // MARK: Shutdown observers

    /// Registers `body` to run on the loop's thread when the loop shuts down: after the work queued before
    /// the shutdown has run, before timers and watches are cancelled. Observers run in the order they were
    /// registered, once, the leading ones first; Swift concurrency jobs they cause (a task resumed) run in the
    /// same final drain.
    ///
    /// For what lives on a loop and must end with it (a connection, a listener): it tells its own waiters.
    ///
    /// - Parameters:
    ///   - owner: Identifies the observer for ``removeShutdownObserver(_:)``; one observer per owner.
    ///   - leading: Runs before every observer registered without it, whenever registered: for what must
    ///     end before what it made (a child process, killed before its pipes close and it reads their end).
    ///   - body: Runs once, on the loop's thread, if the loop shuts down while it is registered.
    /// - Returns: False when the loop has already begun to shut down (nothing registered: end now).
    ///
    /// Loop thread only.
    package func addShutdownObserver(_ owner: ObjectIdentifier, leading: Bool = false,
                                     _ body: @escaping () -> Void) -> Bool {
        precondition(isCurrent, "EventLoop.addShutdownObserver called off the loop's thread")
        guard queue.isAccepting else { return false }
        state.value.addShutdownObserver(owner, leading: leading, body)
        return true
    }

    /// Unregisters the observer `owner` registered (it ended on its own). Loop thread only.
    package func removeShutdownObserver(_ owner: ObjectIdentifier) {
        precondition(isCurrent, "EventLoop.removeShutdownObserver called off the loop's thread")
        state.value.shutdownObservers[owner] = nil
    }

    /// Queues cleanup work that must run even while the loop shuts down (freeing a resource that may not
    /// be freed inside the callback that gave it up): taken until the final drain is over, like a Swift
    /// concurrency job, where ``enqueue(_:)`` is refused as soon as the shutdown begins.
    ///
    /// - Throws: ``EventLoopError/shutDown`` only once the loop has finished shutting down.
    ///
    /// Safe from any thread.
    package func enqueueCleanup(_ work: @escaping @Sendable () -> Void) throws(EventLoopError) {
        try append(Job(work), isExecutorJob: true)
    }
}
