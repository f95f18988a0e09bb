import CLoopKit
import LoopKit

// File-descriptor watches from C.

@c @implementation
public func lk_watch_fd(
    _ handle: OpaquePointer!, _ fd: Int32, _ events: Int32,
    _ fn: (@convention(c) (UnsafeMutableRawPointer?, Int32, Int32) -> Void)!,
    _ ctx: UnsafeMutableRawPointer!, _ out: UnsafeMutablePointer<OpaquePointer?>!
) -> Int32 {
    guard let loop = Handles.borrow(handle, as: EventLoop.self), let fn else { return Status.invalid }
    let wanted = IOEvents(rawValue: events)
    guard !wanted.isEmpty, wanted.isSubset(of: [.readable, .writable]) else { return Status.invalid }
    let context = Context(ctx)
    return Status.run { () throws(EventLoopError) in
        let watch = try loop.watch(fd, for: wanted) { ready in fn(context.pointer, fd, ready.rawValue) }
        if let out { Handles.store(Handles.retain(watch), in: out) }
    }
}

@c @implementation
public func lk_watch_cancel(_ handle: OpaquePointer!) -> Int32 {
    guard let handle, let watch = Handles.borrow(handle, as: Watch.self) else { return Status.invalid }
    watch.cancel()
    Handles.release(handle, as: Watch.self)
    return Status.ok
}
