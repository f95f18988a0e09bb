import Synchronization

/// Runs a sequence's steps: starts each on its target, takes its result back on the loop, retries, times
/// out, cancels, and reports the outcome once. All of its state is touched on the loop's thread only.
final class StepEngine: Sendable {
    private let loop: EventLoop
    private let target: EventLoop?
    private let steps: [Step]
    private let onError: (@Sendable (StepError) -> Void)?
    private let onFinish: (@Sendable (StepOutcome<any Sendable>) -> Void)?
    private let onDiagnostic: (@Sendable (String) -> Void)?
    private let cancelRequested = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)
    private let state: LoopConfined<State>
    /// The run's progress: the steps' weights in all; each step that succeeds adds its weight.
    let progress: TaskProgress

    /// Where the run is. Loop thread only.
    private struct State {
        var index = 0
        var attempt = 1
        /// Identifies the current attempt; a result carrying an older token is ignored.
        var token: UInt64 = 0
        var input: any Sendable = ()
        var timeout: ScheduledTimer?
        var task: Task<Void, Never>?
        var callback: CallbackCore?
    }

    init(loop: EventLoop, target: EventLoop?, steps: [Step],
         onError: (@Sendable (StepError) -> Void)?,
         onFinish: (@Sendable (StepOutcome<any Sendable>) -> Void)?,
         onDiagnostic: (@Sendable (String) -> Void)?) {
        self.loop = loop
        self.target = target
        self.steps = steps
        self.onError = onError
        self.onFinish = onFinish
        self.onDiagnostic = onDiagnostic
        state = LoopConfined(State(), owner: loop.owner)
        progress = TaskProgress(totalUnitCount: max(1, steps.reduce(0) { $0 + $1.weight }), clock: loop.timeSource)
        // Cancelling the progress (or a parent of it) cancels the run. Weak: the progress may outlive it.
        progress.cancellationHandler = { [weak self] in self?.cancel() }
    }

    var isFinished: Bool { finished.load(ordering: .acquiring) }

    /// Queues the first step. A loop that refuses ends the run at once as failed, on the calling thread.
    func start() {
        onLoop(next: 0) { [self] in startStep() }
    }

    /// Cancels the run; on a loop that has shut down, reports the cancellation at once (any thread).
    func cancel() {
        guard !cancelRequested.exchange(true, ordering: .acquiringAndReleasing) else { return }
        do {
            try loop.invoke { [self] in
                guard !isFinished else { return }
                finish(.cancelled)
            }
        } catch {
            // Nothing runs on the loop any more: the run ends here, as asked.
            finishOffLoop(.cancelled)
        }
    }

    /// Queues `body` on the sequence's loop. If the loop refuses it (shut down) or drops it (freed before
    /// running it), the run ends as failed with ``StepError/Reason/loopShutDown``, on whichever thread
    /// found out: never silently.
    private func onLoop(next index: Int, _ body: @escaping @Sendable () -> Void) {
        do {
            try loop.appendCancellable(body, onCancel: { [self] in loopGone(next: index) })
        } catch {
            loopGone(next: index)
        }
    }

    /// The sequence's loop can run nothing more: fail the run with the step that was due.
    private func loopGone(next index: Int) {
        let error = StepError(stepIndex: index, stepName: index < steps.count ? steps[index].name : "end",
                              attempts: 0, reason: .loopShutDown)
        if loop.isCurrent {
            guard !isFinished else { return }
            finish(.failed(error))
        } else {
            finishOffLoop(.failed(error))
        }
    }

    /// Ends the run from off the loop (the loop has shut down): the handlers run on the calling thread.
    /// Touches none of the loop-confined state; a step still running sees its late result ignored.
    private func finishOffLoop(_ outcome: StepOutcome<any Sendable>) {
        guard !finished.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if case .cancelled = outcome { progress.cancel() }
        report(outcome)
    }

    // MARK: Loop thread

    private func startStep() {
        guard !isFinished else { return }
        if cancelRequested.load(ordering: .acquiring) { return finish(.cancelled) }
        let index = state.value.index
        guard index < steps.count else { return finish(.succeeded(state.value.input)) }
        let step = steps[index]
        // A loop that is shutting down still runs what was queued: start no step it could not finish.
        guard loop.isAcceptingWork else { return fail(step, .loopShutDown) }
        state.value.token &+= 1
        let token = state.value.token
        let input = state.value.input
        let target: EventLoop
        switch StepTargets.target(for: step.target ?? self.target) {
        case .success(let loop): target = loop
        case .failure(let error): return fail(step, .targetUnavailable(error))
        }
        if let limit = step.timeout {
            do {
                state.value.timeout = try loop.schedule(
                    after: limit, whenDropped: { [self] in loopGone(next: index) }
                ) { [self] in timedOut(token, limit) }
            } catch {
                return fail(step, .loopShutDown)  // the loop thread's schedule refuses only after shutdown
            }
        }
        let deliver: @Sendable (Result<any Sendable, any Error>) -> Void = { [self] result in
            onLoop(next: index) { [self] in stepFinished(token, result) }
        }
        // A job the target drops unrun (the target loop freed while it waited) fails the step.
        let dropped: @Sendable () -> Void = { deliver(.failure(TargetDropped())) }
        do {
            switch step.body {
            case .sync(let body):
                try target.appendCancellable({ deliver(Result { try body(input) }) }, onCancel: dropped)
            case .async(let body):
                // A task's jobs cannot be refused (the executor traps): check the target is open first.
                guard target.isAcceptingWork else { return fail(step, .targetShutDown) }
                state.value.task = Task(executorPreference: target) {
                    do { deliver(.success(try await body(input))) } catch { deliver(.failure(error)) }
                }
            case .callback(let body):
                let core = CallbackCore(deliver: deliver) { [self] in
                    onLoop(next: index) { [self] in
                        onDiagnostic?("step \(index) '\(step.name)' completed more than once; later completions are ignored")
                    }
                }
                state.value.callback = core
                try target.appendCancellable({ body(input, StepCallback(core: core)) }, onCancel: dropped)
            }
        } catch {
            fail(step, .targetShutDown)
        }
    }

    private func stepFinished(_ token: UInt64, _ result: Result<any Sendable, any Error>) {
        guard !isFinished, token == state.value.token else { return }  // a stale attempt
        endAttempt()
        let step = steps[state.value.index]
        switch result {
        case .success(let value):
            state.value.input = value
            if step.weight > 0 { progress.increment(by: step.weight) }
            state.value.index += 1
            state.value.attempt = 1
            startStep()
        case .failure(let error):
            if cancelRequested.load(ordering: .acquiring) { return finish(.cancelled) }
            retryOrFail(step, error is TargetDropped ? .targetShutDown : .failed(error))
        }
    }

    private func timedOut(_ token: UInt64, _ limit: Duration) {
        guard !isFinished, token == state.value.token else { return }
        state.value.token &+= 1  // the running attempt's result, if it ever comes, is stale now
        state.value.task?.cancel()
        state.value.callback?.cancel()
        endAttempt()
        retryOrFail(steps[state.value.index], .timedOut(limit))
    }

    private func retryOrFail(_ step: Step, _ reason: StepError.Reason) {
        let attempt = state.value.attempt
        guard attempt < step.retry.maxAttempts else { return fail(step, reason) }
        state.value.attempt = attempt + 1
        let index = state.value.index
        do {
            // A retry timer the loop drops at shutdown ends the run rather than leaving it waiting.
            try loop.schedule(after: step.retry.delay(after: attempt),
                              whenDropped: { [self] in loopGone(next: index) }) { [self] in startStep() }
        } catch {
            fail(step, reason)
        }
    }

    private func fail(_ step: Step, _ reason: StepError.Reason) {
        finish(.failed(StepError(stepIndex: state.value.index, stepName: step.name,
                                 attempts: state.value.attempt, reason: reason)))
    }

    private func endAttempt() {
        state.value.timeout?.cancel()
        state.value.timeout = nil
        state.value.task = nil
        state.value.callback = nil
    }

    private func finish(_ outcome: StepOutcome<any Sendable>) {
        guard !finished.exchange(true, ordering: .acquiringAndReleasing) else { return }
        state.value.task?.cancel()
        state.value.callback?.cancel()
        endAttempt()
        state.value.input = ()
        switch outcome {
        case .succeeded: progress.completedUnitCount = progress.totalUnitCount
        case .cancelled: progress.cancel()
        case .failed: break
        }
        report(outcome)
    }

    /// Calls the error handler (for a failure), then the final handler: once per run.
    private func report(_ outcome: StepOutcome<any Sendable>) {
        if case .failed(let error) = outcome { onError?(error) }
        onFinish?(outcome)
    }
}

/// The error a step's result carries when its target loop dropped the step without running it.
private struct TargetDropped: Error {}
