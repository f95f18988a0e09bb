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
        progress = TaskProgress(totalUnitCount: max(1, steps.reduce(0) { $0 + $1.weight }))
        // Cancelling the progress (or a parent of it) cancels the run. Weak: the progress may outlive it.
        progress.cancellationHandler = { [weak self] in self?.cancel() }
    }

    var isFinished: Bool { finished.load(ordering: .acquiring) }

    func start() {
        do {
            try loop.enqueue { [self] in startStep() }
        } catch {
            // The loop is gone: nothing can run on it, not even the handlers.
            finished.store(true, ordering: .releasing)
        }
    }

    func cancel() {
        guard !cancelRequested.exchange(true, ordering: .acquiringAndReleasing) else { return }
        try? loop.invoke { [self] in
            guard !isFinished else { return }
            finish(.cancelled)
        }
    }

    // MARK: Loop thread

    private func startStep() {
        guard !isFinished else { return }
        if cancelRequested.load(ordering: .acquiring) { return finish(.cancelled) }
        let index = state.value.index
        guard index < steps.count else { return finish(.succeeded(state.value.input)) }
        let step = steps[index]
        state.value.token &+= 1
        let token = state.value.token
        let input = state.value.input
        guard let target = step.target ?? target ?? StepTargets.defaultTarget else {
            return fail(step, .targetShutDown)
        }
        if let limit = step.timeout {
            state.value.timeout = try? loop.schedule(after: limit) { [self] in timedOut(token, limit) }
        }
        let deliver: @Sendable (Result<any Sendable, any Error>) -> Void = { [self] result in
            try? loop.enqueue { [self] in stepFinished(token, result) }
        }
        do {
            switch step.body {
            case .sync(let body):
                try target.enqueue { deliver(Result { try body(input) }) }
            case .async(let body):
                state.value.task = Task(executorPreference: target) {
                    do { deliver(.success(try await body(input))) } catch { deliver(.failure(error)) }
                }
            case .callback(let body):
                let core = CallbackCore(deliver: deliver) { [self] in
                    try? loop.enqueue { [self] in
                        onDiagnostic?("step \(index) '\(step.name)' completed more than once; later completions are ignored")
                    }
                }
                state.value.callback = core
                try target.enqueue { body(input, StepCallback(core: core)) }
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
            retryOrFail(step, .failed(error))
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
        do {
            try loop.schedule(after: step.retry.delay(after: attempt)) { [self] in startStep() }
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
        if case .failed(let error) = outcome { onError?(error) }
        onFinish?(outcome)
    }
}
