import CLoopKit
import LoopKit

// Signal watches from C.

@c @implementation
public func lk_signal_watch(
    _ handle: OpaquePointer!, _ signum: Int32, _ fn: lk_signal_fn!,
    _ ctx: UnsafeMutableRawPointer!, _ out: UnsafeMutablePointer<OpaquePointer?>!
) -> Int32 {
    guard let loop = Handles.borrow(handle, as: EventLoop.self), let fn else { return Status.invalid }
    let context = Context(ctx)
    return Status.run { () throws(EventLoopError) in
        let watch = try loop.onSignal(signum) { fn(context.pointer, signum) }
        if let out { Handles.store(Handles.retain(watch), in: out) }
    }
}

@c @implementation
public func lk_signal_cancel(_ handle: OpaquePointer!) -> Int32 {
    guard let handle, let watch = Handles.borrow(handle, as: Watch.self) else { return Status.invalid }
    watch.cancel()
    Handles.release(handle, as: Watch.self)
    return Status.ok
}
