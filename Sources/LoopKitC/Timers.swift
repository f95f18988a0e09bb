import CLoopKit
import LoopKit

// Timers from C.

@c @implementation
public func lk_timer_start(
    _ handle: OpaquePointer!, _ delay: UInt64, _ repeatInterval: UInt64,
    _ fn: lk_fn!, _ ctx: UnsafeMutableRawPointer!, _ out: UnsafeMutablePointer<OpaquePointer?>!
) -> Int32 {
    guard let loop = Handles.borrow(handle, as: EventLoop.self), let fn else { return Status.invalid }
    let context = Context(ctx)
    let interval: Duration? = repeatInterval > 0 ? .nanoseconds(Int64(clamping: repeatInterval)) : nil
    return Status.run { () throws(EventLoopError) in
        let timer = try loop.schedule(after: .nanoseconds(Int64(clamping: delay)), repeating: interval) {
            fn(context.pointer)
        }
        if let out { Handles.store(Handles.retain(timer), in: out) }
    }
}

@c @implementation
public func lk_timer_cancel(_ handle: OpaquePointer!) -> Int32 {
    guard let handle, let timer = Handles.borrow(handle, as: ScheduledTimer.self) else { return Status.invalid }
    timer.cancel()
    Handles.release(handle, as: ScheduledTimer.self)
    return Status.ok
}
