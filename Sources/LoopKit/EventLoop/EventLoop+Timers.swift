extension EventLoop {
    /// Schedules `body` to run on the loop once `delay` has passed, and then every `interval` if given.
    ///
    /// Timers fire in phase 2 of an iteration, in (deadline, scheduling order), never before their
    /// deadline; a timer scheduled with zero delay in iteration N fires no earlier than N + 1 (R8). A
    /// repeating timer keeps its period's grid: a late tick fires late and the next is still due one period
    /// after the late one's deadline. A timer that falls a whole period or more behind fires one overdue tick
    /// in the next iteration and drops the ticks before it rather than firing in a burst.
    ///
    /// - Parameters:
    ///   - delay: Time from now until the first firing; negative counts as zero.
    ///   - interval: The period of a repeating timer; nil for a one-shot timer. Must be positive.
    ///   - body: The work to run on the loop's thread.
    /// - Returns: A handle that cancels the timer.
    /// - Throws: ``EventLoopError/shutDown`` once shut down; ``EventLoopError/invalidArgument(_:)`` for a
    ///   zero or negative interval.
    ///
    /// Safe from any thread; from another thread the timer joins the loop's heap in the next iteration,
    /// its deadline still measured from this call.
    @discardableResult
    public func schedule(
        after delay: Duration, repeating interval: Duration? = nil,
        _ body: @escaping @Sendable () -> Void
    ) throws(EventLoopError) -> ScheduledTimer {
        try schedule(after: delay, repeating: interval, whenDropped: nil, body)
    }

    /// ``schedule(after:repeating:_:)`` with a callback for when the loop drops the timer unfired.
    @discardableResult
    package func schedule(
        after delay: Duration, repeating interval: Duration? = nil,
        whenDropped: (@Sendable () -> Void)?, _ body: @escaping @Sendable () -> Void
    ) throws(EventLoopError) -> ScheduledTimer {
        var period: UInt64?
        if let interval {
            guard interval > .zero else {
                throw .invalidArgument("a repeating timer needs a positive interval, got \(interval)")
            }
            period = max(1, interval.clampedNanoseconds)
        }
        let timer = ScheduledTimer(interval: period, body: body, whenDropped: whenDropped)
        try schedule(timer, deadline: timeSource.nanoseconds() &+ delay.clampedNanoseconds)
        return timer
    }

    /// A one-shot timer due at `deadline` on the loop's time line (``EventLoopClock``'s sleeps).
    /// Safe from any thread.
    func schedule(
        atNanoseconds deadline: UInt64, whenDropped: (@Sendable () -> Void)?, _ body: @escaping @Sendable () -> Void
    ) throws(EventLoopError) -> ScheduledTimer {
        let timer = ScheduledTimer(interval: nil, body: body, whenDropped: whenDropped)
        try schedule(timer, deadline: deadline)
        return timer
    }

    /// Puts `timer` on the heap, from the loop's thread now, from another thread in the next iteration.
    private func schedule(_ timer: ScheduledTimer, deadline: UInt64) throws(EventLoopError) {
        if owner.isCurrent {
            guard queue.isAccepting else { throw .shutDown }
            insert(timer, deadline: deadline)
        } else {
            // Weak: a queued job must not keep its own loop alive (the loop's teardown cancels it).
            try appendCancellable({ [weak self] in
                if let self, self.queue.isAccepting { self.insert(timer, deadline: deadline) } else { timer.markCancelled() }
            }, onCancel: { timer.markCancelled() })
        }
    }

    /// Adds a timer to the heap. Loop thread only.
    private func insert(_ timer: ScheduledTimer, deadline: UInt64) {
        let sequence = state.value.nextTimerSequence
        state.value.nextTimerSequence = sequence &+ 1
        state.value.timers.insert(TimerEntry(deadline: deadline, sequence: sequence, timer: timer))
        if isAttached { armTimerEvent() }
    }

    /// Whether the earliest live timer is due now. Loop thread only.
    package var hasDueTimer: Bool {
        guard let first = state.value.timers.min else { return false }
        return first.deadline <= timeSource.nanoseconds()
    }

    /// The deadline of the earliest timer, in the clock's nanoseconds, or nil. Loop thread only.
    package var nextTimerDeadline: UInt64? {
        while let first = state.value.timers.min, first.timer.isCancelled {
            _ = state.value.timers.popMin()
        }
        return state.value.timers.min?.deadline
    }

    /// The timers scheduled on the loop and not cancelled (fired one-shot timers have left the heap): what
    /// a test counts to see who keeps a timer. Loop thread only.
    package var liveTimerCount: Int {
        state.value.timers.unordered.count { !$0.timer.isCancelled }
    }

    /// Phase 2, second half: fires the timers due at the time read once on entry, in (deadline,
    /// scheduling order). Timers scheduled while this runs wait for a later iteration (R8).
    ///
    /// Then, if the timerfd fired, resets it: set for the next deadline (`timerfd_settime` resets a
    /// fired timerfd), or read when there is none. Done after the bodies ran, so a due timer's body does
    /// not wait for that system call, and a timer chain costs one system call per timer less.
    func fireDueTimers() {
        runDueTimers()
        guard state.value.timerEventFired else { return }
        state.value.timerEventFired = false
        armTimerEvent()
        if state.value.armedTimerDeadline == nil { events.acknowledgeTimer() }
    }

    private func runDueTimers() {
        guard let first = state.value.timers.min else { return }
        let now = timeSource.nanoseconds()
        guard first.deadline <= now else { return }
        let cutoff = state.value.nextTimerSequence
        while let entry = state.value.timers.min, entry.deadline <= now, entry.sequence < cutoff {
            _ = state.value.timers.popMin()
            let timer = entry.timer
            guard !timer.isCancelled else { continue }
            if let interval = timer.interval {
                var next = entry.deadline &+ interval
                if next <= now {
                    // A period or more behind: keep one overdue tick (the last one due), drop the ones before.
                    next = entry.deadline &+ (now - entry.deadline) / interval &* interval
                }
                let sequence = state.value.nextTimerSequence
                state.value.nextTimerSequence = sequence &+ 1
                state.value.timers.insert(TimerEntry(deadline: next, sequence: sequence, timer: timer))
            } else {
                timer.markFired()
            }
            state.value.callbacksRun += 1
            if state.value.isObserved { noteTimerFired(lateness: now &- min(now, entry.deadline)) }
            timer.body()
        }
    }

    /// Sets the loop's timer event (a timerfd) for the earliest deadline, so a waiting poll wakes for it (a
    /// clock that does not advance by itself needs no wake-up). Loop thread only.
    func armTimerEvent() {
        guard timeSource.advancesByItself, let deadline = nextTimerDeadline else {
            if state.value.armedTimerDeadline != nil {
                events.disarmTimer()
                state.value.armedTimerDeadline = nil
            }
            return
        }
        guard state.value.armedTimerDeadline != deadline else { return }
        let now = timeSource.nanoseconds()
        events.armTimer(inNanoseconds: deadline > now ? deadline - now : 0)
        state.value.armedTimerDeadline = deadline
    }
}
