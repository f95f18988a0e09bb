/// Why a step sequence failed: which step, after how many attempts, and the underlying error.
public struct StepError: Error, Sendable, CustomStringConvertible {
    /// What went wrong in the step.
    public enum Reason: Sendable {
        /// The step threw (or its callback failed with) this error.
        case failed(any Error)
        /// The step did not finish within its timeout.
        case timedOut(Duration)
        /// The loop the step should run on has shut down.
        case targetShutDown
        /// The sequence's own loop has shut down (or was freed) before the sequence could go on: the step
        /// named did not start, or its result could not come back.
        case loopShutDown
        /// No loop could be started to run the step: the shared default target's worker group failed to
        /// start with this error (see ``StepSequence/setDefaultTarget(_:)``).
        case targetUnavailable(EventLoopError)
    }

    /// The step's position in the sequence, from 0.
    public let stepIndex: Int
    /// The step's name (its given name, or "step N").
    public let stepName: String
    /// How many attempts were made.
    public let attempts: Int
    /// What went wrong.
    public let reason: Reason

    /// The step's own error, if it threw one.
    public var underlyingError: (any Error)? {
        if case .failed(let error) = reason { error } else { nil }
    }

    public var description: String {
        let tries = attempts == 1 ? "" : " after \(attempts) attempts"
        switch reason {
        case .failed(let error): return "step \(stepIndex) '\(stepName)' failed\(tries): \(error)"
        case .timedOut(let limit): return "step \(stepIndex) '\(stepName)' timed out after \(limit)\(tries)"
        case .targetShutDown: return "step \(stepIndex) '\(stepName)' could not run: its target loop has shut down"
        case .loopShutDown:
            return "step \(stepIndex) '\(stepName)' could not go on: the sequence's loop has shut down"
        case .targetUnavailable(let error):
            return "step \(stepIndex) '\(stepName)' could not run: no default target could be started (\(error))"
        }
    }
}

/// How a step sequence ended.
public enum StepOutcome<Output: Sendable>: Sendable {
    /// Every step succeeded; the last one's result.
    case succeeded(Output)
    /// A step failed; the sequence stopped there.
    case failed(StepError)
    /// ``RunningSequence/cancel()`` stopped the sequence.
    case cancelled
}
