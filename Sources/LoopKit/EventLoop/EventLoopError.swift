/// Why a loop refused a call.
///
/// Every case carries a message that says what went wrong and what to do instead.
public enum EventLoopError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The call must be made on the loop's own thread and was made elsewhere.
    case wrongThread(operation: String)
    /// `run` or `runOnce` was called from inside one of the loop's own callbacks (R11).
    case reentrantRun
    /// The loop has shut down and refuses new work (R10).
    case shutDown
    /// The work was queued before shutdown but the loop ended without running it (R6, R10).
    case cancelled
    /// The loop is attached to a host's `event_base`; the host drives it, so `run`/`runOnce` do not.
    case attached
    /// An argument is out of range.
    case invalidArgument(String)
    /// A libevent call failed; the associated values name it and give the `errno` it left (0 if none).
    case libevent(String, errno: Int32)
    /// A system call failed with the given `errno`-style status.
    case system(String, Int32)

    public var description: String {
        switch self {
        case .wrongThread(let operation):
            "\(operation) must be called on the loop's own thread; use invoke, enqueue or invokeAndWait to reach it from another thread"
        case .reentrantRun:
            "the loop is already running an iteration on this thread; run and runOnce cannot be called from inside the loop's own callbacks"
        case .shutDown:
            "the loop has shut down and refuses new work"
        case .cancelled:
            "the loop shut down before this work ran"
        case .attached:
            "the loop is attached to a host's event_base; drive it with the host's event_base_loop, not run or runOnce"
        case .invalidArgument(let message):
            "invalid argument: \(message)"
        case .libevent(let call, let code):
            code == 0 ? "libevent call \(call) failed" : "libevent call \(call) failed (errno \(code))"
        case .system(let call, let status):
            "\(call) failed with errno \(status)"
        }
    }
}
