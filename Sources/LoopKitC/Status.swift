import CLoopKit
import LoopKit

/// The `LK_E*` status codes as Swift values.
enum Status {
    static let ok = Int32(LK_OK)
    static let invalid = Int32(LK_EINVAL)
    static let closed = Int32(LK_ECLOSED)
    static let busy = Int32(LK_EBUSY)
    static let noMemory = Int32(LK_ENOMEM)
    static let cancelled = Int32(LK_ECANCELED)
    static let wrongThread = Int32(LK_ETHREAD)

    /// The status code for a loop error. No Swift error crosses into C.
    static func of(_ error: EventLoopError) -> Int32 {
        switch error {
        case .wrongThread: wrongThread
        case .reentrantRun: busy
        case .shutDown: closed
        case .cancelled: cancelled
        case .attached, .invalidArgument: invalid
        case .libevent, .system: noMemory
        }
    }

    /// The status code for any error a wrapped call can throw.
    static func of(_ error: any Error) -> Int32 {
        (error as? EventLoopError).map(of) ?? invalid
    }

    /// Runs a throwing call and maps its outcome to `LK_OK` or an `LK_E*` code.
    static func run(_ body: () throws(EventLoopError) -> Void) -> Int32 {
        do {
            try body()
            return ok
        } catch {
            return of(error)
        }
    }
}

@c @implementation
public func lk_strerror(_ status: Int32) -> UnsafePointer<CChar>! {
    switch status {
    case Status.ok: staticCString("success")
    case Status.invalid: staticCString("invalid argument (NULL handle or callback, or a value out of range)")
    case Status.closed: staticCString("the loop has shut down and refuses new work")
    case Status.busy: staticCString("the loop is running one of its callbacks (no re-entrant run or destroy)")
    case Status.noMemory: staticCString("out of memory (libevent could not allocate)")
    case Status.cancelled: staticCString("the work was cancelled before it ran")
    case Status.wrongThread: staticCString("called from a thread other than the loop's")
    default: staticCString("unknown LoopKit status code")
    }
}

@c @implementation
public func lk_version() -> UnsafePointer<CChar>! {
    staticCString("0.1.0")
}

@c @implementation
public func lk_init() -> Int32 {
    EventLoop.enableThreading() ? Status.ok : Status.noMemory
}
