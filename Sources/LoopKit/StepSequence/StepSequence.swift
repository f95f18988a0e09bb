import Synchronization

/// A typed, serial sequence of steps that run off the loop, one after another, with the flow, errors and
/// completion handled on the loop.
///
/// ```swift
/// let run = StepSequence(on: loop)
///     .then("fetch") { () throws -> [UInt8] in try download() }
///     .then("decode", retry: .attempts(3)) { bytes in try decode(bytes) }
///     .then("store") { model async throws in try await database.save(model) }
///     .onError { error in show(error) }            // on the loop, once, if a step fails
///     .finally { outcome in hideSpinner() }        // on the loop, once, however it ended
///     .start()
/// run.cancel()                                      // from any thread
/// ```
///
/// Each step runs on its target loop (a ``LoopGroup`` worker by default; see
/// ``StepSequence/setDefaultTarget(_:)``) and receives the previous step's result; the first receives
/// `()`. After a step finishes, its result hops to the sequence's loop, which starts the next step, so
/// a sequence of any length never grows the stack.
///
/// A `StepSequence` is a description; ``start()`` runs it (and may be called again for another run).
/// Building it is safe from any thread.
public struct StepSequence<Output: Sendable>: Sendable {
    let loop: EventLoop
    let target: EventLoop?
    let steps: StepList
    let errorHandler: (@Sendable (StepError) -> Void)?
    let finalHandler: (@Sendable (StepOutcome<Output>) -> Void)?
    let diagnosticHandler: (@Sendable (String) -> Void)?

    private func adding<Next>(_ step: Step) -> StepSequence<Next> {
        StepSequence<Next>(loop: loop, target: target, steps: steps.appending(step), errorHandler: nil,
                           finalHandler: nil, diagnosticHandler: diagnosticHandler)
    }

    private func step(_ name: String?, _ target: EventLoop?, _ timeout: Duration?, _ retry: RetryPolicy,
                      _ weight: Int64, _ body: StepBody) -> Step {
        Step(name: name ?? "step \(steps.count)", target: target, timeout: timeout, retry: retry,
             weight: max(0, weight), body: body)
    }

    /// Adds a synchronous step that turns the previous result into the next.
    ///
    /// - Parameters:
    ///   - name: Names the step in errors and diagnostics (default "step N").
    ///   - target: The loop the step runs on; default: the sequence's target.
    ///   - timeout: Fails the step with ``StepError/Reason/timedOut(_:)`` if it has not finished in time
    ///     (a synchronous step cannot be interrupted; its late result is ignored).
    ///   - retry: How often to try again after a failure or timeout.
    ///   - weight: The step's share of the sequence's ``RunningSequence/progress``.
    ///   - body: The work; runs on `target`, never on the sequence's loop unless that is the target.
    public func then<Next: Sendable>(
        _ name: String? = nil, on target: EventLoop? = nil, timeout: Duration? = nil,
        retry: RetryPolicy = .never, weight: Int64 = 1,
        _ body: @escaping @Sendable (Output) throws -> Next
    ) -> StepSequence<Next> {
        adding(step(name, target, timeout, retry, weight, .sync { input in try body(input as! Output) }))
    }

    /// Adds an async step; it sees Swift task cancellation when the sequence is cancelled or the step times out.
    ///
    /// Parameters as for synchronous `then`; the step runs
    /// as a task whose executor preference is its target loop.
    public func then<Next: Sendable>(
        _ name: String? = nil, on target: EventLoop? = nil, timeout: Duration? = nil,
        retry: RetryPolicy = .never, weight: Int64 = 1,
        _ body: @escaping @Sendable (Output) async throws -> Next
    ) -> StepSequence<Next> {
        adding(step(name, target, timeout, retry, weight, .async { input in try await body(input as! Output) }))
    }

    /// Adds a callback step for callback-based APIs: it calls the ``StepCallback`` it is given, once.
    ///
    /// Parameters as for the synchronous `then`.
    public func thenCallback<Next: Sendable>(
        _ name: String? = nil, on target: EventLoop? = nil, timeout: Duration? = nil,
        retry: RetryPolicy = .never, weight: Int64 = 1,
        _ body: @escaping @Sendable (Output, StepCallback<Next>) -> Void
    ) -> StepSequence<Next> {
        adding(step(name, target, timeout, retry, weight, .callback { input, done in
            body(input as! Output, StepCallback<Next>(core: done.core))
        }))
    }

    /// Sets the handler that runs on the loop, once, when a step fails (after its retries).
    public func onError(_ handler: @escaping @Sendable (StepError) -> Void) -> StepSequence {
        StepSequence(loop: loop, target: target, steps: steps, errorHandler: handler,
                     finalHandler: finalHandler, diagnosticHandler: diagnosticHandler)
    }

    /// Sets the handler that runs on the loop, once, when the sequence ends: succeeded (with the last
    /// step's result), failed or cancelled. It runs after ``onError(_:)``.
    public func finally(_ handler: @escaping @Sendable (StepOutcome<Output>) -> Void) -> StepSequence {
        StepSequence(loop: loop, target: target, steps: steps, errorHandler: errorHandler,
                     finalHandler: handler, diagnosticHandler: diagnosticHandler)
    }

    /// Sets the handler for misuse that cannot fail the sequence, such as a callback step completing
    /// twice. Runs on the loop.
    public func onDiagnostic(_ handler: @escaping @Sendable (String) -> Void) -> StepSequence {
        StepSequence(loop: loop, target: target, steps: steps, errorHandler: errorHandler,
                     finalHandler: finalHandler, diagnosticHandler: handler)
    }

    /// Starts a run: the first step starts in the loop's next drain (R2: the next iteration's when started
    /// from the drain, this iteration's when started from an I/O or timer callback).
    ///
    /// - Returns: The run, to cancel it or follow its progress.
    ///
    /// Safe from any thread. Every run ends exactly once, and its handlers (``onError(_:)`` for a failure,
    /// then ``finally(_:)``) run exactly once. They run on the loop, except when the loop can run nothing
    /// more: if the loop has shut down, the run ends at once as failed with
    /// ``StepError/Reason/loopShutDown`` and the handlers run on the calling thread; if the loop shuts
    /// down mid-run, the run ends as failed on whichever thread finds out (the loop's own during its
    /// shutdown, or the target's when a step's result can no longer come back).
    @discardableResult
    public func start() -> RunningSequence<Output> {
        let running = prepare()
        running.engine.start()
        return running
    }

    /// The run, not yet started.
    private func prepare() -> RunningSequence<Output> {
        var onFinish: (@Sendable (StepOutcome<any Sendable>) -> Void)?
        if let finalHandler {
            onFinish = { (outcome: StepOutcome<any Sendable>) in
                let typed: StepOutcome<Output> = outcome.typed()
                finalHandler(typed)
            }
        }
        let engine = StepEngine(loop: loop, target: target, steps: steps.steps, onError: errorHandler,
                                onFinish: onFinish, onDiagnostic: diagnosticHandler)
        return RunningSequence(engine: engine)
    }

    /// Runs the sequence and returns the last step's result.
    ///
    /// Every way the run ends resumes the caller exactly once, as ``start()`` describes (a loop that has
    /// shut down ends it at once). A task cancelled before the call throws `CancellationError` before
    /// any step starts; cancelling it later cancels the run.
    ///
    /// - Returns: The last step's result (`()` for a sequence without steps).
    /// - Throws: ``StepError`` when a step fails or the loop shuts down; `CancellationError` when the
    ///   sequence (or the awaiting task) is cancelled.
    ///
    /// Safe from any task.
    public func run() async throws -> Output {
        try Task.checkCancellation()
        // The run once started, and whether the task was cancelled (possibly before the run existed).
        let box = Lock<(running: RunningSequence<Output>?, cancelled: Bool)>((nil, false))
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let running = self.finally { outcome in
                    self.finalHandler?(outcome)
                    switch outcome {
                    case .succeeded(let value): continuation.resume(returning: value)
                    case .failed(let error): continuation.resume(throwing: error)
                    case .cancelled: continuation.resume(throwing: CancellationError())
                    }
                }.prepare()
                let cancelled = box.withLock { box -> Bool in
                    box.running = running
                    return box.cancelled
                }
                // Cancelled between the check above and now: the run reports cancelled before any step.
                if cancelled { running.cancel() }
                running.engine.start()
            }
        } onCancel: {
            box.withLock { box -> RunningSequence<Output>? in
                box.cancelled = true
                return box.running
            }?.cancel()
        }
    }
}

extension StepSequence where Output == Void {
    /// Starts describing a sequence whose flow is controlled on `loop`.
    ///
    /// - Parameters:
    ///   - loop: The loop that starts each step, passes results on, and runs the handlers.
    ///   - target: The loop the steps run on unless a step says otherwise; default: the process-wide
    ///     default target (``setDefaultTarget(_:)``).
    public init(on loop: EventLoop, target: EventLoop? = nil) {
        self.init(loop: loop, target: target, steps: StepList(), errorHandler: nil, finalHandler: nil,
                  diagnosticHandler: nil)
    }

    /// Sets the process-wide default target for steps.
    ///
    /// Until it is set, steps run on a worker loop of a shared one-thread ``LoopGroup`` started on first
    /// use. Safe from any thread.
    public static func setDefaultTarget(_ target: EventLoop) {
        StepTargets.setDefault(target)
    }
}

/// The steps of a sequence under construction, shared by the builders that extend one another.
///
/// Builders are values, and `sequence.then { … }` must not copy every step so far (a 100,000-step
/// sequence would take quadratic time to build). Each builder sees the first `count` steps of a shared
/// buffer; extending the newest builder appends in place, extending an older one (a branch) copies its
/// prefix first.
struct StepList: Sendable {
    private final class Storage: Sendable {
        let steps: Lock<[Step]>
        init(_ steps: [Step]) { self.steps = Lock(steps) }
    }

    private let storage: Storage
    /// How many of the shared steps belong to this builder.
    let count: Int

    init() {
        storage = Storage([])
        count = 0
    }

    private init(storage: Storage, count: Int) {
        self.storage = storage
        self.count = count
    }

    /// This list with `step` at the end.
    func appending(_ step: Step) -> StepList {
        let count = count
        let extendedInPlace = storage.steps.withLock { steps -> Bool in
            guard steps.count == count else { return false }
            steps.append(step)
            return true
        }
        if extendedInPlace { return StepList(storage: storage, count: count + 1) }
        let prefix = self.steps
        return StepList(storage: Storage(prefix + [step]), count: count + 1)
    }

    /// The steps, in order.
    var steps: [Step] {
        let count = count
        return storage.steps.withLock { Array($0.prefix(count)) }
    }
}

/// The process-wide default target for steps.
enum StepTargets {
    private static let storage = Lock<(target: EventLoop?, workers: LoopGroup?)>((nil, nil))

    static func setDefault(_ target: EventLoop) {
        storage.withLock { $0.target = target }
    }

    /// `target`, or the default target (starting the shared worker group on first use); the error that
    /// kept the worker group from starting, if it did not.
    static func target(for target: EventLoop?) -> Result<EventLoop, EventLoopError> {
        if let target { return .success(target) }
        return storage.withLock { storage -> Result<EventLoop, EventLoopError> in
            if let target = storage.target { return .success(target) }
            do throws(EventLoopError) {
                let workers = try LoopGroup(threads: 1, name: "loopkit-steps")
                storage.workers = workers
                let target = workers.next()
                storage.target = target
                return .success(target)
            } catch {
                return .failure(error)
            }
        }
    }
}

extension StepOutcome where Output == any Sendable {
    func typed<Typed: Sendable>() -> StepOutcome<Typed> {
        switch self {
        case .succeeded(let value): .succeeded(value as! Typed)
        case .failed(let error): .failed(error)
        case .cancelled: .cancelled
        }
    }
}
