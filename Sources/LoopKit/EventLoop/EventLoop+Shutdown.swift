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
        let first = queue.withLock { queue -> Bool in
            guard queue.lifecycle == .open else { return false }
            queue.lifecycle = .closing
            acceptingWork.store(false, ordering: .releasing)
            return true
        }
        guard first else { return }
        if owner.isCurrent {
            if !state.value.inIteration { finishShutdown() }
            return
        }
        stopRequested.store(true, ordering: .relaxed)
        wakeUps.add(1, ordering: .relaxed)
        events.wake()
    }

    /// Runs what was queued before the shutdown, then cancels timers and watches. Loop thread only.
    func finishShutdown() {
        // New work is refused, so the queue only shrinks; jobs a drain runs cannot add to it.
        while hasQueuedWork {
            CurrentLoop.with(self) { drainQueue() }
        }
        state.value.releaseAll()
        events.timer.remove()
        events.tick.remove()
        events.stopWakeUps()
        queue.withLock { $0.lifecycle = .closed }
    }
}
