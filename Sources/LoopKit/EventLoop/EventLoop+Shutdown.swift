extension EventLoop {
    /// Shuts the loop down: new work is refused from now on, work queued before runs, timers and watches
    /// are cancelled (R10).
    ///
    /// On the loop's thread outside an iteration, everything happens before the call returns. Inside one
    /// of the loop's callbacks it happens at the end of that iteration. From another thread, a running
    /// loop finishes the shutdown at the end of its iteration and ``run()`` returns; a loop that is not
    /// running reports its queued work cancelled at once (``invokeAndWait(_:)`` callers get
    /// ``EventLoopError/cancelled``). Calling it again does nothing.
    ///
    /// Safe from any thread.
    public func shutdown() {
        let first = queue.withLock { queue -> Bool in
            guard queue.lifecycle == .open else { return false }
            queue.lifecycle = .closing
            return true
        }
        guard first else { return }
        if owner.isCurrent {
            if !state.value.inIteration { finishShutdown() }
            return
        }
        stopRequested.store(true, ordering: .relaxed)
        if !isAttached { events.tick.activate() }
        if isAttached || !runActive.load(ordering: .sequentiallyConsistent) {
            // Nobody may ever drain this queue: report what it holds as cancelled, not lost.
            let orphans = queue.withLock { $0.takeAll() }
            for job in orphans { job.cancel?() }
            if isAttached { events.tick.activate() }
        }
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
        queue.withLock { $0.lifecycle = .closed }
    }
}
