/// A started ``StepSequence``: cancel it, or ask whether it has finished.
public struct RunningSequence<Output: Sendable>: Sendable {
    let engine: StepEngine

    /// Cancels the run: a running synchronous step finishes but its result is dropped, an async step's
    /// task is cancelled, a callback step's ``StepCallback/isCancelled`` turns true; the next step never
    /// starts. The sequence then reports ``StepOutcome/cancelled`` once (the error handler does not run).
    /// Cancelling a finished run, or cancelling twice, does nothing.
    ///
    /// Safe from any thread.
    public func cancel() { engine.cancel() }

    /// Whether the run has ended (succeeded, failed or cancelled). Safe from any thread.
    public var isFinished: Bool { engine.isFinished }

    /// The run's progress: its total is the sum of the steps' weights, and each step that succeeds adds
    /// its weight (a sequence of zero total weight counts as one unit, completed at the end).
    ///
    /// It joins the current ``TaskProgress`` of the code that started the run, if there is one.
    /// Cancelling it (or a parent) cancels the run. Safe from any thread.
    public var progress: TaskProgress { engine.progress }
}
