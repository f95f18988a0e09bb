import CLoopKit
import LoopKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The `LK_E*` status codes as Swift values.
enum Status {
    static let ok = Int32(LK_OK)
    static let invalid = Int32(LK_EINVAL)
    static let closed = Int32(LK_ECLOSED)
    static let busy = Int32(LK_EBUSY)
    static let noMemory = Int32(LK_ENOMEM)
    static let cancelled = Int32(LK_ECANCELED)
    static let wrongThread = Int32(LK_ETHREAD)
    static let system = Int32(LK_ESYS)
    static let again = Int32(LK_EAGAIN)

    /// The status code for a loop error. No Swift error crosses into C.
    static func of(_ error: EventLoopError) -> Int32 {
        switch error {
        case .wrongThread: wrongThread
        case .reentrantRun: busy
        case .shutDown: closed
        case .cancelled: cancelled
        case .attached, .invalidArgument: invalid
        case .libevent(_, let code) where code == ENOMEM: noMemory
        case .libevent(_, let code), .system(_, let code): failedSystemCall(errno: code)
        }
    }

    /// `LK_ESYS`, keeping `code` for `lk_last_errno` on this thread.
    static func failedSystemCall(errno code: Int32) -> Int32 {
        LastErrno.set(code)
        return system
    }

    /// The status code for a work pool's refusal or cancellation.
    static func of(_ error: WorkPoolError) -> Int32 {
        switch error {
        case .queueFull: again
        case .shutDown: closed
        case .cancelled: cancelled
        case .threadStartFailed(let code): failedSystemCall(errno: code)
        }
    }

    /// The status code for any error a wrapped call can throw.
    static func of(_ error: any Error) -> Int32 {
        if let error = error as? EventLoopError { return of(error) }
        if let error = error as? WorkPoolError { return of(error) }
        if error is CancellationError { return cancelled }
        return invalid
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
    case Status.noMemory: staticCString("out of memory (an allocation in LoopKit or libevent failed)")
    case Status.cancelled: staticCString("the work was cancelled before it ran")
    case Status.wrongThread: staticCString("called from a thread other than the loop's")
    case Status.system: staticCString("a system or libevent call failed (lk_last_errno() tells its errno)")
    case Status.again: staticCString("the work pool's queue is full: nothing was queued; try again later")
    default: staticCString("unknown LoopKit status code")
    }
}

/// "MAJOR.MINOR.PATCH" from loopkit.h's `LK_VERSION_*` macros, made once and kept for the process.
private let versionString = PersistentCString("\(LK_VERSION_MAJOR).\(LK_VERSION_MINOR).\(LK_VERSION_PATCH)")

@c @implementation
public func lk_version() -> UnsafePointer<CChar>! {
    versionString.pointer
}

@c @implementation
public func lk_last_errno() -> Int32 {
    LastErrno.get()
}

@c @implementation
public func lk_init() -> Int32 {
    EventLoop.enableThreading() ? Status.ok : Status.noMemory
}
