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
        // With a timer spin, an owned loop wakes that much early and watches the clock up to the deadline.
        let lead = isAttached ? 0 : timerSpinNanoseconds.load(ordering: .relaxed)
        let wakeAt = deadline > lead ? deadline - lead : 0
        events.armTimer(inNanoseconds: wakeAt > now ? wakeAt - now : 0)
        state.value.armedTimerDeadline = deadline
    }

    /// How long before a timer's deadline a waiting loop wakes up and watches the clock instead, so that
    /// the timer fires within microseconds of its deadline rather than after the system's wake-up latency.
    ///
    /// A thread that waits for a timer is woken by the kernel at the deadline and then runs when the CPU
    /// gets to it: on an idle machine whose cores halt (a VM's vCPU), tens to hundreds of microseconds later.
    /// A loop with a timer spin asks to be woken `timerSpin` before the deadline and spins the rest, watching
    /// its inbox too (another thread's job still runs at once). The cost is CPU: up to `timerSpin` per timer
    /// the loop waits for, so a loop with a 1 ms timer and a 200 µs spin uses up to a fifth of a core. Zero,
    /// the default, waits for every timer; values are clamped to 0…10 ms. Timers still never fire before
    /// their deadline (R8), the timer fires in the iteration that woke for it, and I/O that becomes ready
    /// during a spin is taken when it ends. An attached loop (whose host waits) and a loop on virtual time
    /// never spin.
    ///
    /// ```swift
    /// loop.timerSpin = .microseconds(200)   // a frame clock, a pacer: timers on time, for CPU
    /// ```
    ///
    /// Safe from any thread; takes effect from the loop's next wait.
    public var timerSpin: Duration {
        get { .nanoseconds(Int64(timerSpinNanoseconds.load(ordering: .relaxed))) }
        set {
            let clamped = min(max(newValue, .zero), .milliseconds(10))
            timerSpinNanoseconds.store(UInt64(clamped.clampedNanoseconds), ordering: .relaxed)
        }
    }

    /// The next timer's deadline when it is not due yet but within the timer spin of now (see ``timerSpin``).
    /// Loop thread only.
    func timerDeadlineWithinSpin() -> UInt64? {
        let lead = timerSpinNanoseconds.load(ordering: .relaxed)
        guard lead > 0, !isAttached, let deadline = nextTimerDeadline else { return nil }
        let now = timeSource.nanoseconds()
        return deadline > now && deadline - now <= lead ? deadline : nil
    }
}
