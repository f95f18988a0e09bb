import CLoopKit
import LoopKit

// Creating, driving, stopping and freeing loops from C.

@c @implementation
public func lk_loop_create(_ out: UnsafeMutablePointer<OpaquePointer?>!) -> Int32 {
    guard let out else { return Status.invalid }
    return Status.run { () throws(EventLoopError) in
        Handles.store(Handles.retain(try EventLoop()), in: out)
    }
}

@c @implementation
public func lk_loop_attach(_ base: OpaquePointer!, _ out: UnsafeMutablePointer<OpaquePointer?>!) -> Int32 {
    guard let base, let out else { return Status.invalid }
    return Status.run { () throws(EventLoopError) in
        Handles.store(Handles.retain(try EventLoop(attachingTo: base)), in: out)
    }
}

@c @implementation
public func lk_loop_main(_ out: UnsafeMutablePointer<OpaquePointer?>!) -> Int32 {
    guard let out else { return Status.invalid }
    return Status.run { () throws(EventLoopError) in
        // The main loop lives as long as the process: its handle is an unretained reference.
        Handles.store(Handles.unretained(try EventLoop.makeMain()), in: out)
    }
}

@c @implementation
public func lk_loop_destroy(_ handle: OpaquePointer!) -> Int32 {
    guard let loop = Handles.borrow(handle, as: EventLoop.self) else { return Status.invalid }
    guard !loop.isMain else { return Status.busy }
    guard loop.isCurrent else { return Status.wrongThread }
    guard !loop.isInIteration else { return Status.busy }
    loop.shutdown()
    Handles.release(handle, as: EventLoop.self)
    return Status.ok
}

@c @implementation
public func lk_loop_run(_ handle: OpaquePointer!) -> Int32 {
    guard let loop = Handles.borrow(handle, as: EventLoop.self) else { return Status.invalid }
    return Status.run { () throws(EventLoopError) in try loop.run() }
}

@c @implementation
public func lk_loop_run_once(_ handle: OpaquePointer!, _ mayBlock: Int32) -> Int32 {
    guard let loop = Handles.borrow(handle, as: EventLoop.self) else { return Status.invalid }
    do {
        return Int32(clamping: try loop.runOnce(blocking: mayBlock != 0))
    } catch {
        return Status.of(error)
    }
}

@c @implementation
public func lk_loop_stop(_ handle: OpaquePointer!) -> Int32 {
    guard let loop = Handles.borrow(handle, as: EventLoop.self) else { return Status.invalid }
    loop.stop()
    return Status.ok
}

@c @implementation
public func lk_loop_shutdown(_ handle: OpaquePointer!) -> Int32 {
    guard let loop = Handles.borrow(handle, as: EventLoop.self) else { return Status.invalid }
    loop.shutdown()
    return Status.ok
}

@c @implementation
public func lk_loop_iteration(_ handle: OpaquePointer!) -> UInt64 {
    Handles.borrow(handle, as: EventLoop.self)?.iteration ?? 0
}

@c @implementation
public func lk_loop_set_timer_spin(_ handle: OpaquePointer!, _ spin: UInt64) -> Int32 {
    guard let loop = Handles.borrow(handle, as: EventLoop.self) else { return Status.invalid }
    loop.timerSpin = .nanoseconds(Int64(min(spin, UInt64(Int64.max))))
    return Status.ok
}

@c @implementation
public func lk_loop_timer_spin(_ handle: OpaquePointer!) -> UInt64 {
    guard let loop = Handles.borrow(handle, as: EventLoop.self) else { return 0 }
    return UInt64(loop.timerSpin.clampedNanoseconds)
}

@c @implementation
public func lk_loop_is_current(_ handle: OpaquePointer!) -> Int32 {
    Handles.borrow(handle, as: EventLoop.self)?.isCurrent == true ? 1 : 0
}

@c @implementation
public func lk_loop_event_base(_ handle: OpaquePointer!) -> OpaquePointer! {
    Handles.borrow(handle, as: EventLoop.self)?.eventBase
}

@c @implementation
public func lk_loop_set_iteration_observer(_ handle: OpaquePointer!, _ fn: lk_iteration_fn!, _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    guard let loop = Handles.borrow(handle, as: EventLoop.self) else { return Status.invalid }
    guard let fn else {
        return Status.run { () throws(EventLoopError) in try loop.setIterationObserver(nil) }
    }
    let context = Context(ctx)
    return Status.run { () throws(EventLoopError) in
        try loop.setIterationObserver { report in
            var c = lk_iteration_report(
                iteration: report.iteration, poll_wait_ns: nanoseconds(report.pollWait),
                io_callbacks_ns: nanoseconds(report.ioCallbacks), timers_ns: nanoseconds(report.timers),
                drain_ns: nanoseconds(report.drain), total_ns: nanoseconds(report.total),
                io_callback_count: UInt64(report.ioCallbackCount), timers_fired: UInt64(report.timersFired),
                drained_jobs: UInt64(report.drainedJobs), queue_depth: UInt64(report.queueDepth),
                worst_timer_lateness_ns: nanoseconds(report.worstTimerLateness), budget_overrun: report.budgetOverrun ? 1 : 0)
            fn(context.pointer, &c)
        }
    }
}

/// A non-negative duration in whole nanoseconds (negative ones, which a report never holds, as 0).
private func nanoseconds(_ duration: Duration) -> UInt64 {
    let (seconds, attoseconds) = duration.components
    guard seconds >= 0, attoseconds >= 0 else { return 0 }
    return UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000).partialValue &+ UInt64(attoseconds / 1_000_000_000)
}
