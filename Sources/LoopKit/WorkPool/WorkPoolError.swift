/// Why a ``WorkPool`` refused work, or ended it without running it.
///
/// Every case carries a message that says what went wrong and what to do instead.
public enum WorkPoolError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The pool's queue already holds ``WorkPool/queueLimit`` items that have not started; nothing was kept.
    case queueFull(limit: Int)
    /// The pool has shut down and refuses new work; nothing was kept.
    case shutDown
    /// The work was queued, but the pool shut down before a thread took it: it never ran.
    case cancelled
    /// The pool could not start one of its threads (the system refused a thread with this `errno`).
    case threadStartFailed(errno: Int32)

    public var description: String {
        switch self {
        case .queueFull(let limit):
            "the work pool's queue is full (\(limit) items waiting for a thread); retry later, or make the pool's queueLimit larger"
        case .shutDown:
            "the work pool has shut down and refuses new work"
        case .cancelled:
            "the work pool shut down before this work started; it never ran"
        case .threadStartFailed(let code):
            "the work pool could not start a thread (the system refused it: errno \(code))"
        }
    }
}
