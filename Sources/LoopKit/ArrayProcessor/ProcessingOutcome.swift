/// How an array-processing job ended: reported exactly once, to its completion handler.
///
/// Safe from any thread (a value).
public enum ProcessingOutcome: Sendable, CustomStringConvertible {
    /// Every item was processed.
    case succeeded
    /// The job was cancelled (through ``ProcessingJob/cancel()``, its ``ProcessingJob/progress``, an
    /// awaiting task, or a loop that shut down) before every item was processed.
    case cancelled
    /// An item's `each` closure threw; no later item was processed.
    case failed(any Error)

    /// Whether every item was processed.
    public var isSuccess: Bool {
        if case .succeeded = self { return true }
        return false
    }

    /// "succeeded", "cancelled" or "failed: <error>".
    public var description: String {
        switch self {
        case .succeeded: "succeeded"
        case .cancelled: "cancelled"
        case .failed(let error): "failed: \(error)"
        }
    }
}
