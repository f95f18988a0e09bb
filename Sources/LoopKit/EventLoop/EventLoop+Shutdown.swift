extension EventLoop {
    /// Shuts the loop down: new work is refused from now on, work queued before runs, timers and watches
    /// are cancelled (R10).
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
        // New work is refused, so the queue only shrinks; jobs a drain runs cannot add to it.
        while queue.hasJobs {
            CurrentLoop.with(self) { drainQueue() }
        }
        state.value.inIteration = wasInIteration
        state.value.releaseAll()
        events.stopListening()
        lifecycle.withLock { $0.finished() }
    }
}
