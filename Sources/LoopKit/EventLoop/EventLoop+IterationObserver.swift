extension EventLoop {
    /// Installs `observer`, called on the loop's thread after every iteration with what the iteration did
    /// and how long each phase took (``IterationReport``); nil removes it.
    ///
    /// ```swift
    /// try loop.setIterationObserver { report in
    ///     if report.total > .milliseconds(10) { logger.warning("slow iteration: \(report)") }
    /// }
    /// ```
    ///
    /// With no observer installed the loop reads no clock and keeps no figure for it: an iteration costs
    /// one check of a flag more. With one, each iteration reads the loop's clock four times (and once per
    /// I/O callback that is first in its iteration and per fired timer), and takes the queue's inbox lock
    /// once to count what is left. The observer must not run the loop (R11); it may queue work, which runs
    /// in the next iteration's drain. One observer per loop: installing another replaces it.
    ///
    /// - Parameter observer: Receives each iteration's report on the loop's thread; nil to remove.
    /// - Throws: ``EventLoopError/shutDown`` from another thread once the loop refuses work.
    ///
    /// Safe from any thread: on the loop's thread it takes effect from the next iteration; from another,
    /// from the iteration after the drain that installs it.
    public func setIterationObserver(_ observer: (@Sendable (IterationReport) -> Void)?) throws(EventLoopError) {
        if owner.isCurrent {
            state.value.iterationObserver = observer
            state.value.measurement.reset()
            state.value.isObserved = observer != nil
        } else {
            try enqueue { [weak self] in
                guard let self else { return }
                do {
                    try self.setIterationObserver(observer)
                } catch {
                    // Unreachable: on the loop's thread the call does not throw.
                }
            }
        }
    }

    /// Whether an iteration observer is installed. Loop thread only.
    var isObserved: Bool { state.value.isObserved }

    /// Notes an I/O callback about to run (Watch). Loop thread only; called only when observed.
    func noteIOCallback() {
        if state.value.measurement.firstIOCallbackAt == nil { state.value.measurement.firstIOCallbackAt = timeSource.nanoseconds() }
        state.value.measurement.ioCallbackCount += 1
    }

    /// Notes a timer firing `lateness` nanoseconds after its deadline. Loop thread only; only when observed.
    func noteTimerFired(lateness: UInt64) {
        state.value.measurement.timersFired += 1
        state.value.measurement.worstTimerLateness = max(state.value.measurement.worstTimerLateness, lateness)
    }

    /// Notes that a budgeted job's chunk ran past its budget. Loop thread only.
    func noteBudgetOverrun() {
        state.value.budgetOverran = true
    }

    /// Builds the report of the iteration that began at `start` (phase 1), whose timers began at
    /// `timersStart`, whose drain began at `drainStart` and ran `drained` jobs, ending at `end`; hands it to
    /// the observer. Loop thread only.
    func reportIteration(_ iteration: UInt64, start: UInt64, timersStart: UInt64, drainStart: UInt64, end: UInt64, drained: Int) {
        guard let observer = state.value.iterationObserver else { return }
        let measurement = state.value.measurement
        let firstIO = measurement.firstIOCallbackAt.map { min(max($0, start), timersStart) } ?? timersStart
        func span(_ from: UInt64, _ to: UInt64) -> Duration { .nanoseconds(Int64(clamping: to &- from)) }
        let report = IterationReport(
            iteration: iteration, pollWait: span(start, firstIO), ioCallbacks: span(firstIO, timersStart),
            timers: span(timersStart, drainStart), drain: span(drainStart, end),
            ioCallbackCount: measurement.ioCallbackCount, timersFired: measurement.timersFired, drainedJobs: drained,
            queueDepth: queue.depth, worstTimerLateness: .nanoseconds(Int64(clamping: measurement.worstTimerLateness)),
            budgetOverrun: state.value.budgetOverran)
        state.value.measurement.reset()
        state.value.budgetOverran = false
        observer(report)
    }
}
