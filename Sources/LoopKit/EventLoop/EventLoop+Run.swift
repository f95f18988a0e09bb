extension EventLoop {
    /// Runs iterations until ``stop()`` or ``shutdown()``.
    ///
    /// Each pass is one iteration (see ``EventLoop`` for its phases); the loop waits in phase 1 when it
    /// has nothing to do. After ``stop()`` it returns at the end of the iteration in progress; after
    /// ``shutdown()`` it first runs the work queued before the shutdown, then returns.
    ///
    /// - Throws: ``EventLoopError/wrongThread(operation:)`` off the loop's thread;
    ///   ``EventLoopError/reentrantRun`` from inside the loop's own callbacks (R11);
    ///   ``EventLoopError/attached`` for an attached loop; ``EventLoopError/shutDown`` once shut down.
    ///
    /// Call on the loop's thread.
    public func run() throws(EventLoopError) {
        try checkDrivable("run()")
        runActive.store(true, ordering: .sequentiallyConsistent)
        while !stopRequested.load(ordering: .relaxed), queue.isAccepting {
            try runIteration(mayBlock: true)
        }
        stopRequested.store(false, ordering: .relaxed)
        runActive.store(false, ordering: .sequentiallyConsistent)
        // A shutdown from another thread between the last checkpoint and the loop's test is finished here.
        reachCheckpoint(.runEnded)
    }

    /// Runs exactly one iteration.
    ///
    /// - Parameter blocking: Whether phase 1 may wait for I/O, a timer or a wake-up when nothing is
    ///   pending. With false the iteration polls and returns at once: the way a host's frame loop or a
    ///   test steps the loop.
    /// - Returns: The number of callbacks (I/O, timers, queued jobs) the iteration ran.
    /// - Throws: As ``run()`` does.
    ///
    /// Call on the loop's thread.
    @discardableResult
    public func runOnce(blocking: Bool = true) throws(EventLoopError) -> Int {
        try checkDrivable("runOnce(blocking:)")
        return try runIteration(mayBlock: blocking)
    }

    /// Makes ``run()`` return after the iteration in progress; wakes the loop if it is waiting.
    ///
    /// A stop requested while the loop is not running makes the next ``run()`` return after one iteration.
    /// Safe from any thread.
    public func stop() {
        stopRequested.store(true, ordering: .relaxed)
        if !owner.isCurrent, !isAttached { events.wake() }
    }

    /// Whether one of the loop's callbacks is on the stack (an iteration or attached drain is running).
    /// Call on the loop's thread.
    package var isInIteration: Bool { state.value.inIteration }

    /// Refuses to drive the loop from the wrong place; finishes a pending shutdown first (then the caller
    /// is refused with ``EventLoopError/shutDown``, as after any shutdown).
    private func checkDrivable(_ operation: String) throws(EventLoopError) {
        guard !isAttached else { throw .attached }
        guard owner.isCurrent else { throw .wrongThread(operation: operation) }
        guard !state.value.inIteration else { throw .reentrantRun }
        guard reachCheckpoint(.driveRequested) == .proceed else { throw .shutDown }
        if isMain { try watchMainQueue() }
    }

    /// One iteration of an owned loop: the three phases, in order (R9).
    @discardableResult
    private func runIteration(mayBlock: Bool) throws(EventLoopError) -> Int {
        state.value.inIteration = true
        state.value.callbacksRun = 0
        defer { state.value.inIteration = false }
        iterationCounter.add(1, ordering: .relaxed)
        // An observed iteration takes its own path, so that an unobserved one costs one flag check more.
        if state.value.isObserved {
            try runObservedPhases(mayBlock: mayBlock)
        } else {
            try CurrentLoop.with(self) { () throws(EventLoopError) in
                try pollAndRunIO(mayBlock: mayBlock)  // phases 1 and 2a
                fireDueTimers()                       // phase 2b
                runMainQueue()                        // phase 2c, the main loop only (R12)
                drainQueue()                          // phase 3
            }
        }
        let callbacks = state.value.callbacksRun
        reachCheckpoint(.iterationEnded)
        return callbacks
    }

    /// Phase 1: poll. Wait only when nothing is queued and no timer is due, and then no longer than until
    /// the next timer's deadline. Ready I/O callbacks (phase 2, first half) run inside.
    ///
    /// A loop in a conversation with another thread may first spin briefly for that thread's next job
    /// (``WakeSpin``); a loop that waits announces it first, so that a job queued meanwhile wakes it.
    @inline(__always)
    private func pollAndRunIO(mayBlock: Bool) throws(EventLoopError) {
        guard mayBlock && !hasQueuedWork && !hasDueTimer else { return try pollWithoutWaiting() }
        // On virtual time a test steps the loop: no spin, no wait measured.
        let realTime = timeSource.advancesByItself
        if realTime, state.value.wakeSpin.shouldSpin() {
            if spinForJobsFromOtherThreads() {
                state.value.wakeSpin.spinSawJob()
                return try pollWithoutWaiting()
            }
            state.value.wakeSpin.spinSawNothing()
            if hasDueTimer { return try pollWithoutWaiting() }
        }
        // A timer due within the timer spin: watch the clock (and the inbox) rather than wait for it.
        if realTime, let timer = timerDeadlineWithinSpin() {
            _ = spinForJobsFromOtherThreads(until: timer)
            return try pollWithoutWaiting()
        }
        // From the announcement on, another thread may write the wake-up: the next poll that does not wait
        // is a real one, so that it takes that write rather than leave it to end a later wait for nothing.
        state.value.wakeUpMayBePending = true
        guard queue.prepareToSleep() else { return try pollWithoutWaiting() }
        armTimerEvent()
        let start = realTime ? MonotonicTime.nanoseconds() : 0
        do {
            defer { queue.awoke() }
            try events.base.poll(.blocking)
        }
        guard realTime else { return }
        state.value.wakeSpin.waitEnded(afterNanoseconds: MonotonicTime.nanoseconds() &- start,
                                       byAnotherThreadsJob: queue.hasJobsFromOtherThreads)
        // Woken early for a timer (the timer spin): spin up to its deadline, so it fires in this iteration.
        if !hasQueuedWork, let timer = timerDeadlineWithinSpin() {
            _ = spinForJobsFromOtherThreads(until: timer)
        }
    }

    /// Phase 1 when the loop must not wait. Skipped when the base holds only the loop's own events (its
    /// timer and wake-up, and on the main loop Dispatch's main-queue handle), nothing is active, and no
    /// wake-up can be on its way: then a poll can run no callback. Due timers run by the clock and the main
    /// queue is drained every iteration. (libuv's loop skips its poll when it watches no fd, too.) One
    /// system call less per iteration for a loop that only runs jobs and timers.
    ///
    /// A wake-up can be on its way once the loop has announced a wait (``NextIterationQueue/prepareToSleep()``):
    /// a pusher that saw the announcement writes it, maybe after the poll that ended the wait. The first
    /// poll after an announcement is therefore a real one, which takes that write; skipped, the write would
    /// end the loop's next wait at once, an iteration for nothing.
    @inline(__always)
    private func pollWithoutWaiting() throws(EventLoopError) {
        let own = LoopEvents.ownEventCount + (state.value.mainQueueWatch == nil ? 0 : 1)
        guard state.value.wakeUpMayBePending || events.base.eventCount > own else {
            return state.value.skippedPolls += 1
        }
        state.value.wakeUpMayBePending = false
        try events.base.poll(.nonBlocking)
    }

    /// How many polls that would not have waited the loop skipped, watching nothing but its own events
    /// (for tests). Loop thread only.
    package var skippedPolls: Int { state.value.skippedPolls }

    /// Watches the inbox for up to ``WakeSpin/limitNanoseconds``, never past the next timer's deadline.
    /// Returns whether another thread's job arrived.
    private func spinForJobsFromOtherThreads() -> Bool {
        var deadline = timeSource.nanoseconds() &+ WakeSpin.limitNanoseconds
        if let timer = nextTimerDeadline { deadline = min(deadline, timer) }
        return spinForJobsFromOtherThreads(until: deadline)
    }

    /// Watches the inbox until `deadline` on the loop's clock. Returns whether another thread's job arrived.
    private func spinForJobsFromOtherThreads(until deadline: UInt64) -> Bool {
        var rounds = 0
        while !queue.hasJobsFromOtherThreads {
            rounds &+= 1
            if rounds & 63 == 0 {
                if timeSource.nanoseconds() >= deadline { return false }
                // A peer that shares this core gets it now rather than when this loop waits.
                ThisThread.yieldCore()
            }
        }
        return true
    }

    /// The three phases as in ``runIteration(mayBlock:)``, with the loop's clock read between them for
    /// the iteration observer, which then receives the report.
    private func runObservedPhases(mayBlock: Bool) throws(EventLoopError) {
        let iteration = self.iteration
        let start = timeSource.nanoseconds()
        var timersStart: UInt64 = 0, drainStart: UInt64 = 0, drained = 0
        try CurrentLoop.with(self) { () throws(EventLoopError) in
            try pollAndRunIO(mayBlock: mayBlock)
            timersStart = timeSource.nanoseconds()
            fireDueTimers()
            runMainQueue()
            drainStart = timeSource.nanoseconds()
            drained = drainQueue()
        }
        reportIteration(iteration, start: start, timersStart: timersStart, drainStart: drainStart,
                        end: timeSource.nanoseconds(), drained: drained)
    }

    /// Whether any job is queued. On the loop's thread this covers every job; on any other thread, the
    /// jobs other threads queued that the loop has not taken yet.
    package var hasQueuedWork: Bool {
        owner.isCurrent ? queue.hasJobs : queue.hasJobsFromOtherThreads
    }

    /// Phase 3: runs exactly the jobs queued before it began, in order (R1–R3); returns how many ran.
    @discardableResult
    func drainQueue() -> Int {
        var batch = queue.takeSnapshot()
        var ran = 0
        if !batch.isEmpty {
            ran = batch.runFront(limit: drainLimit ?? .max)
            state.value.callbacksRun += ran
            // A drain limit left work: it goes back to the front, ahead of anything queued since (R1).
            if !batch.isEmpty, queue.putBack(&batch), isAttached { requestDrain(fromLoopThread: true) }
        }
        queue.recycle(batch)
        return ran
    }

    /// The tick, the timer or the wake-up event fired. For an owned loop they only end a waiting poll; for
    /// an attached loop, whose phase 1 is the host's poll, they run phases 2 and 3 as one iteration.
    func internalEventFired() {
        guard isAttached, !state.value.inIteration else { return }
        state.value.inIteration = true
        iterationCounter.add(1, ordering: .relaxed)
        let observed = state.value.isObserved
        let iteration = observed ? self.iteration : 0
        let start = observed ? timeSource.nanoseconds() : 0
        var drainStart: UInt64 = 0, drained = 0
        CurrentLoop.with(self) {
            fireDueTimers()
            if observed { drainStart = timeSource.nanoseconds() }
            drained = drainQueue()
        }
        // The host's poll was phase 1: an attached loop's report starts at its timers.
        if observed {
            reportIteration(iteration, start: start, timersStart: start, drainStart: drainStart,
                            end: timeSource.nanoseconds(), drained: drained)
        }
        state.value.inIteration = false
        if reachCheckpoint(.iterationEnded) != .finish { armTimerEvent() }
    }
}
