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
}
